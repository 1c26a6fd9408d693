//! Recompiles the static-tool fixtures with the real nvcc and checks that the
//! findings equal those of the recordings, so the recordings cannot drift from
//! what the pinned compiler produces. nvcc is looked up in `KERNELPRO_NVCC`,
//! the repository's `.venv` wheels, then `PATH`; a missing nvcc fails the test
//! unless `KERNELPRO_NO_NVCC_TESTS=1`.

mod common;

use common::{FIXTURES, Fixture, findings, render};
use kernelpro_lints::Thresholds;
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_nvcc() -> Option<PathBuf> {
    let wheel = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc");
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nvcc"))
            .find(|n| n.is_file())
    });
    std::env::var_os("KERNELPRO_NVCC")
        .map(PathBuf::from)
        .or_else(|| wheel.is_file().then_some(wheel))
        .or(on_path)
}

fn run(tool: &Path, args: &[&str], dir: &Path) -> String {
    let bin = tool.parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{}",
        tool.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // nvcc prints the ptxas report on stderr.
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Compiles `cu` (a path under tests/fixtures) for sm_90 the way record.sh does.
fn compile(nvcc: &Path, cu: &'static str, work: &Path) -> Fixture {
    let name = cu.rsplit('/').next().unwrap();
    std::fs::copy(format!("{FIXTURES}/{cu}"), work.join(name)).unwrap();
    let ptxas = run(
        nvcc,
        &[
            "-arch=sm_90",
            "-cubin",
            "-lineinfo",
            "-Xptxas",
            "-v",
            "-o",
            "k.cubin",
            name,
        ],
        work,
    );
    let sass = run(
        &nvcc.with_file_name("nvdisasm"),
        &["-gi", "-c", "-hex", "k.cubin"],
        work,
    );
    Fixture {
        path: name,
        cu: std::fs::read_to_string(work.join(name)).unwrap(),
        sass,
        ptxas,
    }
}

#[test]
fn nvcc_matches_recordings() {
    let Some(nvcc) = find_nvcc() else {
        if std::env::var("KERNELPRO_NO_NVCC_TESTS").as_deref() == Ok("1") {
            eprintln!("skipped: KERNELPRO_NO_NVCC_TESTS=1 and no nvcc found");
            return;
        }
        panic!(
            "nvcc not found (set KERNELPRO_NVCC, install the pinned wheels into .venv, or put nvcc on PATH); set KERNELPRO_NO_NVCC_TESTS=1 to skip"
        );
    };
    let work = std::env::temp_dir().join(format!("kernelpro-lints-nvcc-{}", std::process::id()));
    let thresholds = Thresholds::default();
    for (cu, recorded) in [
        ("lints/planted.cu", Fixture::planted()),
        ("lints/clean.cu", Fixture::clean()),
        (
            "h200-probe/kernels.cu",
            Fixture::recorded(
                "h200-probe/kernels.cu",
                "lints/kernels.sm90.nvdisasm.txt",
                "lints/kernels.sm90.ptxas.txt",
            ),
        ),
    ] {
        std::fs::create_dir_all(&work).unwrap();
        let fresh = compile(&nvcc, cu, &work);
        assert_eq!(
            render(&findings(&fresh, true, &thresholds)),
            render(&findings(&recorded, true, &thresholds)),
            "{cu}: findings differ from the recording; rerun tests/fixtures/lints/record.sh"
        );
        std::fs::remove_dir_all(&work).unwrap();
    }
}
