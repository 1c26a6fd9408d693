//! WarpScan's forms on the scan fixtures and the KernelBench scans: every candidate written out
//! (an ignored test, for compiling by hand), and the K-chunk form's shape.

use super::tests::{fixture, recipe};
use expect_test::expect;

/// The scan fixtures and KernelBench tasks, each with its kernel.
const SCANS: &[(&str, &str)] = &[
    ("cumsum_2d_double.cu", "cumsum_y"),
    ("cumsum_template_macro.cu", "scaled_exclusive_cumsum"),
    ("cumprod_rows_inline.cu", "cumprod_rows"),
    ("reverse_cumsum_guard_block.cu", "reverse_cumsum"),
    ("masked_cumsum_bytes.cu", "masked_cumsum"),
    ("kbench/89_cumsum.cu", "cumsum_rows"),
    ("kbench/90_cumprod.cu", "cumprod_rows"),
    ("kbench/91_cumsum_reverse.cu", "reverse_cumsum_rows"),
    ("kbench/92_cumsum_exclusive.cu", "exclusive_cumsum_rows"),
    ("kbench/93_masked_cumsum.cu", "masked_cumsum_rows"),
];

/// Every WarpScan candidate of [`SCANS`] written to `$KP_SCAN_OUT` (default /tmp/scan_out) as
/// `FILE.N.cu`, its note on the first line, for `nvcc -arch=sm_90 -cubin` by hand.
#[test]
#[ignore = "writes every WarpScan candidate to a folder for checking by hand with nvcc"]
fn dump_scan_rewrites() {
    let dir = std::env::var("KP_SCAN_OUT").unwrap_or_else(|_| "/tmp/scan_out".into());
    std::fs::create_dir_all(&dir).unwrap();
    for (file, kernel) in SCANS {
        let base = file.rsplit('/').next().unwrap().trim_end_matches(".cu");
        for (n, rw) in recipe("WarpScan").rewrite(&fixture(file), kernel).iter().enumerate() {
            let text = format!("// {}\n{}", rw.note, super::tests::instantiated(&rw.source));
            std::fs::write(format!("{dir}/{base}.{n}.cu"), text).unwrap();
        }
    }
}

/// The candidate of `file`'s kernel whose note ends with `tail`, from its kernel on.
fn kernel_of(file: &str, kernel: &str, tail: &str) -> String {
    let rws = recipe("WarpScan").rewrite(&fixture(file), kernel);
    let rw = rws.iter().find(|r| r.note.ends_with(tail)).unwrap_or_else(|| panic!("no candidate ending {tail:?}"));
    rw.source[rw.source.find("__global__").unwrap()..].to_string()
}

/// Each scan gets the one-chunk form as before (its user's launch and three variants), 4 chunks a
/// step under the same four launches, and 8 chunks under the user's launch and the tuner's first.
#[test]
fn each_scan_gets_one_four_and_eight_chunks_a_step() {
    for (file, kernel) in SCANS {
        let rws = recipe("WarpScan").rewrite(&fixture(file), kernel);
        let launch = |note: &str| note.split_once("; launch").map(|(_, l)| l.to_string());
        let form = |chunks: &str| -> Vec<Option<String>> {
            rws.iter()
                .filter(|r| match chunks {
                    "1" => !r.note.contains("chunks in flight"),
                    n => r.note.contains(&format!(", {n} chunks in flight")),
                })
                .map(|r| launch(&r.note))
                .collect()
        };
        let (one, four, eight) = (form("1"), form("4"), form("8"));
        assert_eq!((one.len(), four.len(), eight.len(), rws.len()), (4, 4, 2, 10), "{file}");
        assert_eq!(one, four, "{file}: the 4-chunk form's launches");
        let first_variant = one.iter().find(|l| l.is_some()).cloned().unwrap();
        assert!(eight.contains(&None) && eight.contains(&first_variant), "{file}: {eight:?}");
        // The one-chunk form is today's text: no chunk array, a step of 32.
        for r in rws.iter().filter(|r| !r.note.contains("chunks in flight")) {
            assert!(!r.source.contains("kp_j") && r.source.contains("kp_c0 += 32") != r.source.contains("kp_c0 -= 32"));
        }
    }
}

/// 89_cumsum with 8 chunks a step: the loop steps by 256 on the group's first element, every lane
/// loads its 8 elements (guarded) before any shuffle, and the store runs under the in-range test
/// of its own element, recomputed beside it, before the chunk's total is carried on.
#[test]
fn eight_chunks_step_by_256_and_store_in_range() {
    let text = kernel_of("kbench/89_cumsum.cu", "cumsum_rows", ", 8 chunks in flight");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = |line: &str| -> Vec<usize> { (0..lines.len()).filter(|&i| lines[i] == line).collect() };
    assert_eq!(at("for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 256) {").len(), 1, "{text}");
    assert_eq!(at("for (int kp_j = 0; kp_j < 8; ++kp_j) {").len(), 3, "{text}");
    let loads = at("if (kp_in) { kp_e[kp_j] = x[(size_t)r * cols + c]; }");
    let stores = at("if (kp_in) y[(size_t)r * cols + c] = kp_acc;");
    let shuffles = at("const decltype(acc) kp_t = __shfl_up_sync(0xffffffffu, kp_e[kp_j], kp_o);");
    // One load and one store, each under its in-range flag; no other line writes y.
    assert_eq!((loads.len(), stores.len(), shuffles.len()), (1, 1, 1), "{text}");
    assert_eq!(lines.iter().filter(|l| l.contains("y[")).count(), 1, "{text}");
    assert!(loads[0] < shuffles[0] && shuffles[0] < stores[0], "{text}");
    // The store's loop recomputes the element and its flag: the store sees its own `c`.
    let s = stores[0];
    assert_eq!(
        lines[s - 4..=s + 1],
        [
            "for (int kp_j = 0; kp_j < 8; ++kp_j) {",
            "const int c = kp_c0 + kp_j * 32 + kp_lane;",
            "const bool kp_in = c < (cols);",
            "const decltype(acc) kp_acc = acc + kp_e[kp_j];",
            "if (kp_in) y[(size_t)r * cols + c] = kp_acc;",
            "acc = acc + __shfl_sync(0xffffffffu, kp_e[kp_j], 31);",
        ],
        "{text}"
    );
    // Out of range, the element is the identity.
    assert_eq!(lines[loads[0] - 1], "kp_e[kp_j] = 0;");
}

/// A reverse scan with 4 chunks walks down by 128, chunk j 32·j elements below the group's first.
#[test]
fn four_chunks_walk_down_by_128() {
    let text = kernel_of("kbench/91_cumsum_reverse.cu", "reverse_cumsum_rows", ", 4 chunks in flight");
    for line in [
        "for (int kp_c0 = cols - 1; kp_c0 >= (0); kp_c0 -= 128) {",
        "const int c = kp_c0 - kp_j * 32 - kp_lane;",
        "const bool kp_in = c >= (0);",
        "if (kp_in) y[(size_t)r * cols + c] = kp_acc;",
    ] {
        assert!(text.lines().any(|l| l.trim() == line), "no {line:?} in\n{text}");
    }
    let cumprod = kernel_of("kbench/90_cumprod.cu", "cumprod_rows", ", 8 chunks in flight");
    assert!(cumprod.contains("kp_e[kp_j] = 1;") && cumprod.contains("kp_e[kp_j] = kp_e[kp_j] * kp_t;"), "{cumprod}");
}

#[test]
fn snapshots() {
    expect![[r#"
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 4 chunks in flight; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 4 chunks in flight; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 4 chunks in flight; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 4 chunks in flight
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 8 chunks in flight; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
        ## one warp per unit (r): its running value scanned 32 elements at a time with shuffles, 8 chunks in flight
        __global__ void cumsum_rows(float* y, const float* x, int rows, int cols) {
          // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
          const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
          const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
          for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
            const int r = (int)(kp_u);
            float acc = 0.0f;
            for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 32) {
              const int c = kp_c0 + kp_lane;
              const bool kp_in = c < (cols);
              decltype(acc) kp_e = 0;
              if (kp_in) { kp_e = x[(size_t)r * cols + c]; }
              // Inclusive scan of the 32 elements across the lanes.
              for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
                const decltype(kp_e) kp_t = __shfl_up_sync(0xffffffffu, kp_e, kp_o);
                if (kp_lane >= kp_o) kp_e = kp_e + kp_t;
              }
              {
                const decltype(acc) kp_acc = acc + kp_e;
                if (kp_in) y[(size_t)r * cols + c] = kp_acc;
              }
              // The chunk's total (lane 31's inclusive value) carries on.
              acc = acc + __shfl_sync(0xffffffffu, kp_e, 31);
            }
          }
        }
    "#]].assert_eq(&super::tests::generated("kbench/89_cumsum.cu", "cumsum_rows", "WarpScan"));
    expect![[r#"
        __global__ void cumsum_rows(float* y, const float* x, int rows, int cols) {
          // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
          const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
          const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
          for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
            const int r = (int)(kp_u);
            float acc = 0.0f;
            for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 256) {
              // 8 chunks of 32: every lane loads its element of each first (8 loads in flight).
              decltype(acc) kp_e[8];
              #pragma unroll
              for (int kp_j = 0; kp_j < 8; ++kp_j) {
                const int c = kp_c0 + kp_j * 32 + kp_lane;
                const bool kp_in = c < (cols);
                kp_e[kp_j] = 0;
                if (kp_in) { kp_e[kp_j] = x[(size_t)r * cols + c]; }
              }
              // Inclusive scans of each chunk's 32 elements across the lanes, the chunks side by side.
              #pragma unroll
              for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
                #pragma unroll
                for (int kp_j = 0; kp_j < 8; ++kp_j) {
                  const decltype(acc) kp_t = __shfl_up_sync(0xffffffffu, kp_e[kp_j], kp_o);
                  if (kp_lane >= kp_o) kp_e[kp_j] = kp_e[kp_j] + kp_t;
                }
              }
              // In the loop's order: each chunk's prefix stored, its total (lane 31's inclusive value) carried on.
              #pragma unroll
              for (int kp_j = 0; kp_j < 8; ++kp_j) {
                const int c = kp_c0 + kp_j * 32 + kp_lane;
                const bool kp_in = c < (cols);
                const decltype(acc) kp_acc = acc + kp_e[kp_j];
                if (kp_in) y[(size_t)r * cols + c] = kp_acc;
                acc = acc + __shfl_sync(0xffffffffu, kp_e[kp_j], 31);
              }
            }
          }
        }
    "#]].assert_eq(&kernel_of("kbench/89_cumsum.cu", "cumsum_rows", ", 8 chunks in flight"));
    let exclusive = kernel_of("kbench/92_cumsum_exclusive.cu", "exclusive_cumsum_rows", ", 4 chunks in flight");
    expect![[r#"
        __global__ void exclusive_cumsum_rows(float* __restrict__ y, const float* __restrict__ x, int rows, int cols) {
          // One warp per unit; lanes scan its elements 32 at a time with shuffles (kernelpro WarpScan).
          const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
          const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
          for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
            const int r = (int)(kp_u);
            const float* xr = x + (long)r * cols;
            float* yr = y + (long)r * cols;
            float acc = 0.0f;
            for (int kp_c0 = 0; kp_c0 < (cols); kp_c0 += 128) {
              // 4 chunks of 32: every lane loads its element of each first (4 loads in flight).
              decltype(acc) kp_e[4];
              #pragma unroll
              for (int kp_j = 0; kp_j < 4; ++kp_j) {
                const int c = kp_c0 + kp_j * 32 + kp_lane;
                const bool kp_in = c < (cols);
                kp_e[kp_j] = 0;
                if (kp_in) { kp_e[kp_j] = xr[c]; }
              }
              // Inclusive scans of each chunk's 32 elements across the lanes, the chunks side by side.
              #pragma unroll
              for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {
                #pragma unroll
                for (int kp_j = 0; kp_j < 4; ++kp_j) {
                  const decltype(acc) kp_t = __shfl_up_sync(0xffffffffu, kp_e[kp_j], kp_o);
                  if (kp_lane >= kp_o) kp_e[kp_j] = kp_e[kp_j] + kp_t;
                }
              }
              // In the loop's order: each chunk's prefix stored, its total (lane 31's inclusive value) carried on.
              #pragma unroll
              for (int kp_j = 0; kp_j < 4; ++kp_j) {
                const int c = kp_c0 + kp_j * 32 + kp_lane;
                const bool kp_in = c < (cols);
                decltype(acc) kp_x = __shfl_up_sync(0xffffffffu, kp_e[kp_j], 1);
                if (kp_lane == 0) kp_x = 0;
                const decltype(acc) kp_acc = acc + kp_x;
                if (kp_in) yr[c] = kp_acc;
                acc = acc + __shfl_sync(0xffffffffu, kp_e[kp_j], 31);
              }
            }
          }
        }
    "#]].assert_eq(&exclusive);
}

/// A mask read at the element's own index is data, not a bounds test: the element's load is issued
/// beside the mask's (a lambda that loads it first, then selects), in both masked scans; an element
/// under a condition on the index itself keeps the conditional load.
#[test]
fn a_masked_elements_load_does_not_wait_for_its_mask() {
    let text = kernel_of("kbench/93_masked_cumsum.cu", "masked_cumsum_rows", ", 8 chunks in flight");
    assert!(
        text.contains("if (kp_in) { kp_e[kp_j] = [&] { const auto kp_v = (x[at]); return (mask[at]) ? kp_v : decltype(kp_v)(0); }(); }"),
        "{text}"
    );
    let text = kernel_of("masked_cumsum_bytes.cu", "masked_cumsum", ", 4 chunks in flight");
    assert!(text.contains("const auto kp_v = (x[r * len + i]); return (mask[r * len + i]) ? kp_v"), "{text}");
    // The bytes fixture with its mask replaced by a test of the index.
    let guarded = fixture("masked_cumsum_bytes.cu").replace("if (mask[r * len + i])", "if (i < rows)");
    let rws = recipe("WarpScan").rewrite(&guarded, "masked_cumsum");
    assert!(!rws.is_empty());
    for rw in rws {
        assert!(
            !rw.source.contains("kp_v") && rw.source.contains("(i < rows) ? (x[r * len + i]) : (0)"),
            "{}",
            rw.source
        );
    }
}
