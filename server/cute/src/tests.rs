//! Detection on kernels that are and are not matrix products; the recipe's
//! whole rewritten files as snapshots (the GPU benchmark compiles these
//! same files); each one compiled by the real nvcc with the CUTLASS wheel's
//! headers; the toolchain flags.

use crate::{CuteGemmRecipe, GemmShape, Math, cute_arch, cute_flags, cute_gemm_kernel, cutlass_include, detect_gemm};
use expect_test::{Expect, expect, expect_file};
use kernelpro_recipes::Recipe;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// The repository; a test binary carried to the GPU machine finds it through KERNELPRO_ROOT.
fn repo() -> PathBuf {
    std::env::var_os("KERNELPRO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn fixture(name: &str) -> String {
    let path = repo().join("tests/fixtures/cute").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn show(s: &GemmShape) -> String {
    let dim = |d: &crate::Dim| format!("{}={}", d.expr, d.value.map_or("?".into(), |v| v.to_string()));
    let scale = s.alpha_beta.as_ref().map_or(String::new(), |x| format!(" C = {}*AB + {}*C", x.alpha, x.beta));
    format!(
        "M {} N {} K {} | A {}:{:?}:{:?} B {}:{:?}:{:?} C {}:{:?}:{:?}{scale}",
        dim(&s.m),
        dim(&s.n),
        dim(&s.k),
        s.a,
        s.a_type,
        s.a_layout,
        s.b,
        s.b_type,
        s.b_layout,
        s.c,
        s.c_type,
        s.c_layout
    )
}

/// The detected product of each kernel, one line each (`-` when none).
fn check_detect(file: &str, kernels: &[&str], expected: Expect) {
    let text = fixture(file);
    let out: String =
        kernels.iter().map(|k| format!("{k}: {}\n", detect_gemm(&text, k).map_or("-".into(), |s| show(&s)))).collect();
    expected.assert_eq(&out);
}

#[test]
fn detects_from_the_op_hint() {
    check_detect(
        "f32_naive.cu",
        &["matmul_naive"],
        expect![[r#"
        matmul_naive: M N=4096 N N=4096 K N=4096 | A A:Float:Row B B:Float:Row C C:Float:Row
    "#]],
    );
    check_detect(
        "bf16_hint_row_col.cu",
        &["gemm_bf16_tn"],
        expect![[r#"
        gemm_bf16_tn: M M=4096 N N=4096 K K=4096 | A A:Bf16:Row B B:Bf16:Col C C:Bf16:Row
    "#]],
    );
}

#[test]
fn detects_naive_loops() {
    check_detect(
        "bf16_naive.cu",
        &["matmul_bf16"],
        expect![[r#"
        matmul_bf16: M N=4096 N N=4096 K N=4096 | A A:Bf16:Row B B:Bf16:Row C C:Bf16:Row
    "#]],
    );
    check_detect(
        "f16_naive.cu",
        &["matmul_f16"],
        expect![[r#"
        matmul_f16: M N=4096 N N=4096 K N=4096 | A A:Half:Row B B:Half:Row C C:Half:Row
    "#]],
    );
    check_detect(
        "scaled_f32_128.cu",
        &["sgemm"],
        expect![[r#"
        sgemm: M M=256 N N=512 K K=128 | A A:Float:Row B B:Float:Row C C:Float:Row C = alpha*AB + beta*C
    "#]],
    );
    check_detect(
        "../recipes/matmul_naive.cu",
        &["matmul_naive"],
        expect![[r#"
        matmul_naive: M N=1000 N N=1000 K N=1000 | A A:Float:Row B B:Float:Row C C:Float:Row
    "#]],
    );
}

#[test]
fn leaves_other_kernels_alone() {
    check_detect(
        "not_gemm.cu",
        &["transposed_b_index", "extra_work", "matmul_fp64", "int_hint", "odd_size", "missing"],
        expect![[r#"
        transposed_b_index: -
        extra_work: -
        matmul_fp64: -
        int_hint: -
        odd_size: M N=1000 N N=1000 K N=1000 | A A:Float:Row B B:Float:Row C C:Float:Row
        missing: -
    "#]],
    );
}

/// (fixture, kernel) rewritten by the recipe, with the snapshot name in
/// `tests/fixtures/cute/generated/` (the launch-changing rewrite of a 16-bit
/// product in `generated/launch/`) and the architectures it must compile for.
const REWRITES: &[(&str, &str, &[&str])] = &[
    ("f32_naive.cu", "matmul_naive", &["sm_90", "sm_80"]),
    ("bf16_naive.cu", "matmul_bf16", &["sm_90"]),
    ("bf16_hint_row_col.cu", "gemm_bf16_tn", &["sm_90"]),
    ("f16_naive.cu", "matmul_f16", &["sm_90"]),
    ("scaled_f32_128.cu", "sgemm", &["sm_90"]),
];

/// The recipe's rewrites of `kernel`: the launch-keeping one, then the launch-changing one if any.
fn rewrites(text: &str, kernel: &str) -> Vec<String> {
    CuteGemmRecipe.rewrite(text, kernel).into_iter().map(|r| r.source).collect()
}

fn rewritten(file: &str, kernel: &str) -> String {
    rewritten_text(&fixture(file), kernel)
}

/// The launch-keeping rewrite.
fn rewritten_text(text: &str, kernel: &str) -> String {
    rewrites(text, kernel).into_iter().next().unwrap_or_else(|| panic!("{kernel}: no rewrite"))
}

/// Every rewrite of the REWRITES cases as (snapshot path, source, arches).
fn all_rewrites() -> Vec<(PathBuf, String, &'static [&'static str])> {
    let generated = repo().join("tests/fixtures/cute/generated");
    REWRITES
        .iter()
        .flat_map(|(file, kernel, arches)| {
            let generated = generated.clone();
            rewrites(&fixture(file), kernel).into_iter().enumerate().map(move |(i, source)| {
                let dir = if i == 0 { generated.clone() } else { generated.join("launch") };
                (dir.join(file), source, *arches)
            })
        })
        .collect()
}

#[test]
fn rewrites_match_the_generated_snapshots() {
    let all = all_rewrites();
    let launch: Vec<String> = all
        .iter()
        .filter(|(p, ..)| p.parent().unwrap().ends_with("launch"))
        .map(|(p, ..)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        launch,
        ["bf16_naive.cu", "bf16_hint_row_col.cu", "f16_naive.cu"],
        "16-bit products get a launch-changing rewrite"
    );
    for (path, source, _) in all {
        expect_file![path].assert_eq(&source);
    }
}

#[test]
fn rewrite_keeps_everything_outside_the_body_and_helper_region() {
    let text = fixture("bf16_naive.cu");
    let source = rewritten("bf16_naive.cu", "matmul_bf16");
    let diff = similar::TextDiff::from_lines(&text, &source);
    let removed: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Delete)
        .map(|c| c.value().trim_end().to_string())
        .collect();
    expect![[r#"
        [
            "__global__ void matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N) {",
            "  int col = blockIdx.x * blockDim.x + threadIdx.x;",
            "  int row = blockIdx.y * blockDim.y + threadIdx.y;",
            "  if (row >= N || col >= N) return;",
            "  float acc = 0.0f;",
            "  for (int k = 0; k < N; k++) {",
            "    acc += __bfloat162float(A[row * N + k]) * __bfloat162float(B[k * N + col]);",
            "  }",
            "  C[row * N + col] = __float2bfloat16(acc);",
        ]
    "#]]
    .assert_debug_eq(&removed);
    let launch = |t: &str| crate::kernel::KernelInfo::find(t, "matmul_bf16").unwrap().launch.unwrap();
    assert_eq!(launch(&source), launch(&text), "the spec still belongs to the kernel and resolves the same");

    // The launch-changing rewrite also replaces `grid` and `block`, and adds `smem`.
    let changing = rewrites(&text, "matmul_bf16").pop().unwrap();
    let diff = similar::TextDiff::from_lines(&text, &changing);
    let changed: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal && c.value().starts_with("// kernelpro:"))
        .map(|c| format!("{}{}", c.tag(), c.value().trim_end()))
        .collect();
    expect![[r#"
        [
            "-// kernelpro: grid = (ceil_div(S, 16), ceil_div(S, 16))",
            "-// kernelpro: block = (16, 16)",
            "+// kernelpro: grid = ceil_div(S, 128) * ceil_div(S, 256)",
            "+// kernelpro: block = 384",
            "+// kernelpro: smem = 198080",
        ]
    "#]]
    .assert_debug_eq(&changed);
    let (old, new) = (launch(&text), launch(&changing));
    assert_eq!((new.grid, new.block, new.smem), ([512, 1, 1], [384, 1, 1], 198080));
    assert_eq!((new.args, new.lets), (old.args, old.lets), "the problem is the same");
}

#[test]
fn recipe_does_not_apply_where_the_fast_path_would_not_run() {
    let not_gemm = fixture("not_gemm.cu");
    for kernel in ["transposed_b_index", "extra_work", "matmul_fp64", "int_hint", "odd_size"] {
        assert!(!CuteGemmRecipe.applies(&not_gemm, kernel), "{kernel}");
    }
    let tuned = fixture("f32_naive.cu")
        .replace("// kernelpro: block = (16, 16)", "// kernelpro: tune T in [16, 32]\n// kernelpro: block = (T, T)");
    assert!(!CuteGemmRecipe.applies(&tuned, "matmul_naive"), "a tune value may change the block");
    let once = rewritten("f32_naive.cu", "matmul_naive");
    assert!(!CuteGemmRecipe.applies(&once, "matmul_naive"), "a kernel already rewritten is left alone");
    assert_eq!(
        (CuteGemmRecipe.name(), CuteGemmRecipe.answers()),
        ("CuteGemm", &[kernelpro_model::Code::TensorCore, kernelpro_model::Code::SharedMemTiling][..])
    );
}

#[test]
fn generation_picks_the_math_and_refuses_unsupported_blocks() {
    let text = fixture("bf16_naive.cu");
    let shape = detect_gemm(&text, "matmul_bf16").unwrap();
    let params = kernelpro_source::parse(&text).kernel("matmul_bf16").unwrap().params.clone();
    let cute = cute_gemm_kernel(&shape, "matmul_bf16", &params, 256).unwrap();
    assert_eq!(cute.math, Math::TensorCore);
    assert_eq!(cute.body, "{\n  kp_cute_gemm_matmul_bf16(A, B, C, int(N), int(N), int(N));\n}");
    assert_eq!(
        cute_gemm_kernel(&shape, "matmul_bf16", &params, 1024).unwrap_err().to_string(),
        "the block has 1024 threads; the CuTe GEMM tiles for 128 or 256"
    );
    let f32 = fixture("f32_naive.cu");
    let shape = detect_gemm(&f32, "matmul_naive").unwrap();
    let params = kernelpro_source::parse(&f32).kernel("matmul_naive").unwrap().params.clone();
    assert_eq!(cute_gemm_kernel(&shape, "matmul_naive", &params, 128).unwrap().math, Math::SimtFp32);
}

#[test]
fn flags_upgrade_hopper_and_find_the_wheel() {
    assert_eq!(cute_arch("sm_90"), "sm_90a");
    assert_eq!(cute_arch("sm_80"), "sm_80");
    let flags = cute_flags("sm_90", Path::new("/x/include"));
    assert_eq!(flags, ["-std=c++17", "--expt-relaxed-constexpr", "-I/x/include", "-arch=sm_90a"]);
    let include = include_dir();
    assert!(include.join("cute/tensor.hpp").is_file());
    // With no CUTLASS anywhere, a bad setting is an error (the environment
    // variables that name a tree are checked after the setting).
    if std::env::var_os("CUTLASS_PATH").is_none() && std::env::var_os("KERNELPRO_VENV").is_none() {
        assert!(cutlass_include(Some(Path::new("/nonexistent")), &[]).is_err());
    }
}

/// nvcc from `KERNELPRO_NVCC` or the repo's pinned wheel.
fn nvcc() -> PathBuf {
    let path = std::env::var_os("KERNELPRO_NVCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc"));
    assert!(
        path.exists(),
        "nvcc not found at {}: set KERNELPRO_NVCC or run scripts/setup.sh to install the pinned CUDA wheels",
        path.display()
    );
    path
}

fn include_dir() -> PathBuf {
    cutlass_include(None, &[repo()]).unwrap_or_else(|e| panic!("{e} (the CuTe compile tests need the headers)"))
}

#[test]
fn every_rewrite_compiles_with_nvcc() {
    // nvcc on CuTe takes tens of seconds: start every build, then wait for each.
    let builds: Vec<_> = all_rewrites()
        .into_iter()
        .flat_map(|(path, source, arches)| arches.iter().map(move |arch| (path.clone(), source.clone(), arch)))
        .map(|(path, source, arch)| {
            let case = format!("{} {arch}", path.display());
            let build = build_cubin(&case, &source, arch);
            (case, build)
        })
        .collect();
    for (case, build) in builds {
        assert!(build.join().is_ok(), "{case}: the build failed (its log is above)");
    }
}

/// The generated bf16 GEMMs on 4096³ through the benchmark harness, each
/// checked against a naive fp32-accumulating kernel: the launch-keeping
/// rewrite under the naive launch, the launch-changing one under its spec's
/// launch and under the naive launch it still accepts (also built for sm_80,
/// its other fallback main loop). Run on a GPU machine:
/// `cargo test -p kernelpro-cute -- --ignored`.
#[test]
#[ignore = "needs a GPU"]
fn bf16_gemm_matches_the_naive_kernel_on_the_gpu() {
    let (nvcc, include) = (nvcc(), include_dir());
    let dir = tempfile::tempdir().unwrap();
    let generated = repo().join("tests/fixtures/cute/generated");
    let changing = generated.join("launch/bf16_naive.cu");
    let spec = crate::kernel::KernelInfo::find(&std::fs::read_to_string(&changing).unwrap(), "matmul_bf16")
        .unwrap()
        .launch
        .unwrap();
    let own_launch = [
        "-DKP_BX=384".to_string(),
        "-DKP_BY=1".into(),
        "-DKP_TILE_M=128".into(),
        "-DKP_TILE_N=256".into(),
        format!("-DKP_DYN_SMEM={}", spec.smem),
    ];
    let naive_launch = ["-DKP_BX=16".to_string(), "-DKP_BY=16".into()];
    // sm_80 code runs on the H200 too: the mma.sync path of the same files.
    let cases = [
        ("keeping", generated.join("bf16_naive.cu"), &naive_launch[..], "sm_90"),
        ("changing", changing.clone(), &own_launch[..], "sm_90"),
        ("changing_old_launch", changing.clone(), &naive_launch[..], "sm_90"),
        ("changing_old_launch_sm80", changing, &naive_launch[..], "sm_80"),
    ];
    let builds: Vec<_> = cases
        .iter()
        .map(|(name, file, launch, arch)| {
            let exe = dir.path().join(name);
            let child = Command::new(&nvcc)
                .args(cute_flags(arch, &include))
                .arg("-include")
                .arg(file)
                .args(["-DKP_KERNEL=matmul_bf16", "-DKP_T=__nv_bfloat16", "-DKP_NDIMS=1"])
                .args(launch.iter())
                .arg("-o")
                .arg(&exe)
                .arg(repo().join("bench/cute_gemm/harness.cu"))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (name, exe, child)
        })
        .collect();
    for (name, exe, child) in builds {
        let build = child.wait_with_output().unwrap();
        assert!(build.status.success(), "{name}: {}", String::from_utf8_lossy(&build.stderr));
        let run = Command::new(&exe).arg("4096").output().unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        println!("{name}: {stdout}");
        assert!(
            run.status.success() && stdout.contains("mismatches 0/"),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
}

/// The 16-bit fixtures as (name, file text, kernel) with B row- and
/// column-major, for bf16 and fp16, each for a 256- and a 128-thread block.
fn sixteen_bit_cases() -> Vec<(String, String, &'static str)> {
    let to_half = |t: String| {
        t.replace("cuda_bf16.h", "cuda_fp16.h")
            .replace("__nv_bfloat16", "__half")
            .replace("bfloat16[", "half[")
            .replace("__bfloat162float", "__half2float")
            .replace("__float2bfloat16", "__float2half")
    };
    let sources = [
        ("bf16_row", fixture("bf16_naive.cu"), "matmul_bf16"),
        ("bf16_col", fixture("bf16_hint_row_col.cu"), "gemm_bf16_tn"),
        ("f16_row", fixture("f16_naive.cu"), "matmul_f16"),
        ("f16_col", to_half(fixture("bf16_hint_row_col.cu")), "gemm_bf16_tn"),
    ];
    sources
        .into_iter()
        .flat_map(|(name, text, kernel)| {
            let small = text.replace("block = (16, 16)", "block = (16, 8)");
            [(format!("{name}_256"), text, kernel), (format!("{name}_128"), small, kernel)]
        })
        .collect()
}

/// Compiles `source` to a cubin for `arch` (through [`cute_flags`]) and
/// returns ptxas's report and the SASS listing.
fn build_cubin(name: &str, source: &str, arch: &str) -> std::thread::JoinHandle<(String, String)> {
    // Several tests build the same rewrite for the same arch: one nvcc per (source, arch) in
    // this process, the others wait for it (CuTe's compiles are most of this crate's test time).
    type Built = Result<(String, String), String>;
    type Builds = Mutex<HashMap<(String, String), Arc<OnceLock<Built>>>>;
    static BUILDS: OnceLock<Builds> = OnceLock::new();
    let cell = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((source.to_string(), arch.to_string()))
        .or_default()
        .clone();
    let (name, source, arch) = (name.to_string(), source.to_string(), arch.to_string());
    std::thread::spawn(move || match cell.get_or_init(|| compile_cubin(&source, &arch)) {
        Ok(built) => built.clone(),
        Err(log) => panic!("{name} {arch}:\n{log}"),
    })
}

/// nvcc's `-Xptxas -v` log and cuobjdump's SASS of `source` built for `arch`, or the failure's log.
fn compile_cubin(source: &str, arch: &str) -> Result<(String, String), String> {
    let (nvcc, include) = (nvcc(), include_dir());
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("kernel.cu");
    std::fs::write(&cu, source).unwrap();
    let cubin = cu.with_extension("cubin");
    let out = Command::new(&nvcc)
        .args(cute_flags(arch, &include))
        .args(["-cubin", "-Xptxas", "-v", "-o"])
        .arg(&cubin)
        .arg(&cu)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(log);
    }
    let sass = Command::new(nvcc.with_file_name("cuobjdump")).arg("-sass").arg(&cubin).output().unwrap();
    if !sass.status.success() {
        return Err(format!("cuobjdump: {}", String::from_utf8_lossy(&sass.stderr)));
    }
    Ok((log, String::from_utf8_lossy(&sass.stdout).into_owned()))
}

/// The number before `unit` in ptxas's report (`Used 108 registers`, `49152 bytes smem`).
fn ptxas_number(log: &str, unit: &str) -> u32 {
    let at = log.find(unit).unwrap_or_else(|| panic!("no `{unit}` in:\n{log}"));
    log[..at]
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number before `{unit}` in:\n{log}"))
}

/// On sm_90a every 16-bit case (bf16/fp16, B row/col, 128/256 threads)
/// builds to HGMMA with at most 48 KiB of static shared memory, no spills
/// and no serialized WGMMAs; for sm_80 the same source keeps mma.sync (whose
/// launch bounds cost it a few bytes of spills, see generate.rs).
#[test]
fn sixteen_bit_gemms_use_wgmma_on_hopper() {
    let mut builds = Vec::new();
    for (name, text, kernel) in sixteen_bit_cases() {
        let source = rewritten_text(&text, kernel);
        if name == "bf16_row_256" {
            builds.push((name.clone(), "sm_80", build_cubin(&name, &source, "sm_80")));
        }
        builds.push((name.clone(), "sm_90", build_cubin(&name, &source, "sm_90")));
    }
    for (name, arch, build) in builds {
        let (log, sass) = build.join().unwrap();
        let case = format!("{name} {arch}:\n{log}");
        assert!(ptxas_number(&log, "bytes smem") <= 48 * 1024, "{case}");
        if arch == "sm_90" {
            assert_eq!(ptxas_number(&log, "bytes spill stores"), 0, "{case}");
            assert_eq!(ptxas_number(&log, "bytes spill loads"), 0, "{case}");
            assert!(sass.contains("HGMMA.64x128x16.F32"), "{case}: no HGMMA");
            // C7514: ptxas waits for each WGMMA before the next.
            assert!(!log.contains("C7514"), "{case}");
            let threads = if name.ends_with("_128") { 128 } else { 256 };
            let registers = ptxas_number(&log, "registers");
            assert!(registers * threads * 2 <= 65536, "{case}: {registers} registers leave no room for two CTAs");
        } else {
            assert!(sass.contains("HMMA.16816.F32") && !sass.contains("HGMMA"), "{case}");
        }
    }
}

/// The launch-changing rewrite of every 16-bit case builds on sm_90a to
/// 64x256 HGMMAs with no spills, registers for 384 threads, and static plus
/// the spec's dynamic shared memory within what a block may have.
#[test]
fn launch_changing_gemms_fit_their_launch_on_hopper() {
    let builds: Vec<_> = sixteen_bit_cases()
        .into_iter()
        .map(|(name, text, kernel)| {
            let source = rewrites(&text, kernel).pop().unwrap();
            let spec = crate::kernel::KernelInfo::find(&source, kernel).unwrap().launch.unwrap();
            assert_eq!(spec.block, [384, 1, 1], "{name}");
            let build = build_cubin(&format!("{name}_launch"), &source, "sm_90");
            (name, spec.smem, build)
        })
        .collect();
    for (name, dynamic, build) in builds {
        let (log, sass) = build.join().unwrap();
        let case = format!("{name}:\n{log}");
        assert!(ptxas_number(&log, "bytes smem") + dynamic <= 227 * 1024, "{case}");
        assert_eq!(ptxas_number(&log, "bytes spill stores"), 0, "{case}");
        assert_eq!(ptxas_number(&log, "bytes spill loads"), 0, "{case}");
        assert!(ptxas_number(&log, "registers") * 384 <= 65536, "{case}");
        assert!(sass.contains("HGMMA.64x256x16.F32"), "{case}: no 64x256 HGMMA");
        assert!(!log.contains("C7514"), "{case}");
    }
}
