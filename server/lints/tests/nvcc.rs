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
    let wheel =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc");
    let on_path =
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvcc")).find(|n| n.is_file()));
    std::env::var_os("KERNELPRO_NVCC").map(PathBuf::from).or_else(|| wheel.is_file().then_some(wheel)).or(on_path)
}

fn run(tool: &Path, args: &[&str], dir: &Path) -> String {
    let bin = tool.parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    assert!(out.status.success(), "{} {args:?} failed:\n{}", tool.display(), String::from_utf8_lossy(&out.stderr));
    // nvcc prints the ptxas report on stderr.
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Compiles `cu` (a path under tests/fixtures) for sm_90 the way record.sh does.
fn compile(nvcc: &Path, cu: &'static str, work: &Path) -> Fixture {
    let name = cu.rsplit('/').next().unwrap();
    std::fs::copy(format!("{FIXTURES}/{cu}"), work.join(name)).unwrap();
    let ptxas = run(nvcc, &["-arch=sm_90", "-cubin", "-lineinfo", "-Xptxas", "-v", "-o", "k.cubin", name], work);
    let sass = run(&nvcc.with_file_name("nvdisasm"), &["-gi", "-c", "-hex", "k.cubin"], work);
    Fixture { path: name, cu: std::fs::read_to_string(work.join(name)).unwrap(), sass, ptxas }
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

/// Local memory from `printf`, a `volatile` local and a run-time indexed array,
/// each named on its line, and a `double` accumulator on the line that
/// accumulates: compiled with the real nvcc, so the causes are what nvcc does.
#[test]
fn local_memory_causes_and_double_accumulator() {
    let Some(nvcc) = find_nvcc() else {
        assert_eq!(std::env::var("KERNELPRO_NO_NVCC_TESTS").as_deref(), Ok("1"), "nvcc not found");
        return;
    };
    let work = std::env::temp_dir().join(format!("kernelpro-lints-causes-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let fresh = compile(&nvcc, "lints/local_causes.cu", &work);
    std::fs::remove_dir_all(&work).unwrap();
    let found = findings(&fresh, true, &Thresholds::default());
    expect_test::expect![[r#"
        LocalMemorySpill 4:17-4:28 `with_printf` uses local memory (16 B stack frame) without register spills
        LocalMemorySpill 6:3-6:69 2 local-memory accesses (LDL/STL) from this line in `with_printf`: `printf` stores its arguments to a buffer in local memory (the stack) for `vprintf`
        LocalMemorySpill 9:17-9:30 `with_volatile` uses local memory (8 B stack frame) without register spills
        LocalMemorySpill 10:3-10:30 2 local-memory accesses (LDL/STL) from this line in `with_volatile`: `guard` is `volatile`, so it lives in local memory and every access goes there
        LocalMemorySpill 11:3-11:51 58 local-memory accesses (LDL/STL) from this line in `with_volatile`: `guard` is `volatile`, so it lives in local memory and every access goes there
        ScalarLoads 18:15-18:19 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
        LocalMemorySpill 21:17-21:35 `with_indexed_array` uses local memory (256 B stack frame) without register spills
        LocalMemorySpill 23:3-23:47 16 local-memory accesses (LDL/STL) from this line in `with_indexed_array`: the per-thread array `table` is indexed at run time, so it lives in local memory
        LocalMemorySpill 24:3-24:86 128 local-memory accesses (LDL/STL) from this line in `with_indexed_array`: the per-thread array `table` is indexed at run time, so it lives in local memory
        MissedReuse 24:81-24:85 `x[k]`: every lane along threadIdx.x reads the same elements over `k` and reduces them again, though each writes its own output: the reduction is recomputed by every thread of the row
        LocalMemorySpill 25:3-25:44 1 local-memory accesses (LDL/STL) from this line in `with_indexed_array`: the per-thread array `table` is indexed at run time, so it lives in local memory
        Fp64Promotion 30:53-30:56 FP64 in float kernel `double_accumulator`: `acc` is a `double` accumulator: each update converts to double and runs on the FP64 pipe"#]].assert_eq(&render(&found));
}
