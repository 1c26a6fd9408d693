//! Issue 29's window and block-scan forms on fixtures written anew in the shapes of the public
//! corpus (a batched box blur with clamped bounds, a Kogge–Stone block scan): which rewrites apply,
//! that each compiles with the real nvcc, and why each does not apply where it must not.

use super::tests::{applied, compile_errors, compile_structural, fixture, recipe};

/// (fixture, kernel, the structural rewrites that apply with their candidate counts; empty: none).
const CASES: &[(&str, &str, &str)] = &[
    // The frame on z, window bounds clamped with min/max, the radius from a scalar.
    ("boxfilter_batched_clamped.cu", "mean_filter", "WindowTile x6"),
    // One image under a guard block, each tap tested against the image.
    ("boxfilter_single_wrapped.cu", "blur_padded", "ColumnUnits x4, WindowTile x8, GridStrideMap x4"),
    // A strided pooling window: the input's size from its taps' guard, the stride from the spec.
    ("maxpool_strided_guarded_taps.cu", "pool_max", "WindowTile x4, GridStrideMap x4"),
    // Written in place: no tile (the warp per output reads and writes as the original did).
    ("boxfilter_writes_input.cu", "blur_in_place", ""),
    // A register read of the partner under one barrier, added under the next; a tid alias.
    ("scan_block_hillis_steele.cu", "block_prefix", "BlockScan x1"),
    // The step's sum in a temporary declared before the loop.
    ("scan_kogge_stone_temp.cu", "ks_scan", "BlockScan x1"),
    // Offsets that stop short of the block: a windowed sum, not a scan.
    ("scan_block_partial_window.cu", "window_sums", ""),
];

#[test]
fn windows_and_block_scans_get_their_forms() {
    let got: Vec<String> = CASES.iter().map(|(f, k, _)| format!("{f} {k}: {}", applied(f, k))).collect();
    let want: Vec<String> = CASES.iter().map(|(f, k, w)| format!("{f} {k}: {w}")).collect();
    assert_eq!(got, want);
}

#[test]
fn window_and_scan_rewrites_compile_for_sm_90() {
    let (compiled, failed) = compile_structural(CASES.iter().map(|(file, kernel, _)| (*file, *kernel)));
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(compiled >= 8, "only {compiled} candidates compiled");
}

/// The reason each form gives where it does not apply, in words.
#[test]
fn why_the_forms_do_not_apply() {
    let cases = [
        ("WindowTile", "boxfilter_writes_input.cu", "blur_in_place", "`img` is written as well as read"),
        (
            "WindowTile",
            "scan_kogge_stone_temp.cu",
            "ks_scan",
            "no guard `if (col >= W || row >= H) return;` bounds the units before other statements",
        ),
        (
            "BlockScan",
            "scan_block_partial_window.cu",
            "window_sums",
            "a launch's block (256, 1, 1) is not a 1D block of whole warps that `64` and `s` cover",
        ),
        (
            "BlockScan",
            "boxfilter_batched_clamped.cu",
            "mean_filter",
            "the loop is not a Kogge–Stone scan step (`if (tid >= s) t = S[tid] + S[tid - s]; sync; if (tid >= s) S[tid] = t;`)",
        ),
    ];
    let got: Vec<String> = cases
        .iter()
        .map(|(r, f, k, _)| format!("{r} {k}: {}", recipe(r).not_applicable(&fixture(f), k).reason))
        .collect();
    let want: Vec<String> = cases.iter().map(|(r, _, k, w)| format!("{r} {k}: {w}")).collect();
    assert_eq!(got, want);
}

/// The window's image offset and tile reads: the frame's `rows * cols` elements, every read through
/// `kp_x(row, col, index as written)`, the user's names re-bound from the tile's unit.
#[test]
fn the_window_reads_through_the_frames_tile() {
    let rws = recipe("WindowTile").rewrite(&fixture("boxfilter_batched_clamped.cu"), "mean_filter");
    let src = &rws[0].source;
    for want in [
        "const long long kp_z = (long long)blockIdx.z * blockDim.z + kp_t / kp_per_image;",
        "kp_tile[kp_e / 36][kp_e % 36] = src[kp_z * (long long)(rows) * (long long)(cols) + kp_r * (long long)(cols) + kp_c];",
        "acc += kp_x((yy), (xx), (frame * rows * cols + yy * cols + xx));",
        "return kp_r >= kp_rlo && kp_r < kp_rhi && kp_c >= kp_clo && kp_c < kp_chi ? kp_tile[kp_r - kp_ri][kp_c - kp_ci] : src[kp_at];",
        "const int frame = (int)(kp_z);",
        "const int y = (int)(kp_ur);",
        "if (kp_ur >= (long long)(rows) || kp_uc >= (long long)(cols)) continue;",
    ] {
        assert!(src.contains(want), "{want}\n{src}");
    }
}

/// The scan's loop is replaced by the shuffle scan; the loads before and the stores after are kept.
#[test]
fn the_block_scan_keeps_the_loads_and_stores() {
    let rws = recipe("BlockScan").rewrite(&fixture("scan_kogge_stone_temp.cu"), "ks_scan");
    let src = &rws[0].source;
    for want in [
        "part[threadIdx.x] = a[gid];",
        "__shfl_up_sync(0xffffffffu, kp_v, kp_o)",
        "if (kp_warp > 0u) kp_v += kp_warp_total[kp_warp - 1u];",
        "part[threadIdx.x] = kp_v;",
        "b[gid] = part[threadIdx.x];",
    ] {
        assert!(src.contains(want), "{want}\n{src}");
    }
    assert!(!src.contains("step *= 2"), "{src}");
}

/// A strided pool's tile: the input rows and columns its 4x32 outputs (the launch's block) read at a
/// stride of 2 (the spec's `step`) and a halo of 1 (`oy * step - pad + ty`, `ty < taps`), loaded inside the input's own `in_h x in_w`, the outputs bounded
/// by `out_h x out_w`.
#[test]
fn the_pool_tile_covers_its_strided_inputs() {
    let rws = recipe("WindowTile").rewrite(&fixture("maxpool_strided_guarded_taps.cu"), "pool_max");
    let src = &rws[0].source;
    for want in [
        "__shared__ float kp_tile[9][65 + 1];",
        "const long long kp_r0 = kp_u0 * 2 - 1, kp_c0 = kp_v0 * 2 - 1;",
        "if (kp_r >= 0 && kp_r < (long long)(in_h) && kp_c >= 0 && kp_c < (long long)(in_w)) kp_tile[kp_e / 65][kp_e % 65] = src[kp_r * (long long)(in_w) + kp_c];",
        "if (kp_ur >= (long long)(out_h) || kp_uc >= (long long)(out_w)) continue;",
        "float v = kp_x((sy), (sx), (sy * in_w + sx));",
    ] {
        assert!(src.contains(want), "{want}\n{src}");
    }
}

/// A stride of 4 over doubles: only the tiles that fit 48 KiB of static shared memory are offered
/// (16x32 outputs under a 32x8 block would read 63x127 inputs, 63 KiB), and those offered compile.
#[test]
fn window_tiles_fit_static_shared_memory() {
    let text = fixture("maxpool_strided_guarded_taps.cu")
        .replace("float", "double")
        .replace("// kernelpro: step = 2", "// kernelpro: step = 4");
    let rws = recipe("WindowTile").rewrite(&text, "pool_max");
    if let Some(e) = rws.iter().find_map(|rw| compile_errors(&rw.source)) {
        panic!("{e}");
    }
    let notes: Vec<String> = rws.into_iter().map(|rw| rw.note).collect();
    assert_eq!(
        notes,
        [
            "2D window over (oy, ox) reading src through 4x32 shared output tiles with the window's halo of 1, an output per thread",
            "2D window over (oy, ox) reading src through 8x32 shared output tiles with the window's halo of 1, 2 outputs per thread; launch block = (32, 4), grid = (ceil_div(OW, 32), ceil_div(OH, 8))"
        ]
    );
}

/// After `Ldg` (`__ldg(&x[E])`) the window reads the same: the call becomes the tile read and the
/// candidate compiles; an address kept for later (`&x[E]`) is not a read.
#[test]
fn the_window_takes_ldg_reads_and_refuses_addresses() {
    let plain = fixture("boxfilter_batched_clamped.cu");
    let read = "src[frame * rows * cols + yy * cols + xx]";
    let ldg = plain.replace(read, &format!("__ldg(&{read})"));
    let rws = recipe("WindowTile").rewrite(&ldg, "mean_filter");
    assert_eq!(rws.len(), 6);
    assert!(rws[0].source.contains("acc += kp_x((yy), (xx), (frame * rows * cols + yy * cols + xx));"));
    if let Some(e) = compile_errors(&rws[0].source) {
        panic!("{e}");
    }
    let pointer = plain.replace(&format!("acc += {read};"), &format!("const float *p = &{read};\n      acc += *p;"));
    assert_ne!(pointer, plain);
    assert_eq!(
        recipe("WindowTile").not_applicable(&pointer, "mean_filter").reason,
        "the address of a read of `src` is taken"
    );
}

/// The tile is loaded before a block's units run: an input size a unit changes is refused.
#[test]
fn the_input_size_stays_fixed_under_the_units() {
    let plain = fixture("maxpool_strided_guarded_taps.cu");
    let shrinks = plain.replace("  dst[oy * out_w + ox] = best;", "  in_w = in_w - 1;\n  dst[oy * out_w + ox] = best;");
    assert_ne!(shrinks, plain);
    assert_eq!(recipe("WindowTile").not_applicable(&shrinks, "pool_max").reason, "`in_w` is changed inside a unit");
}

/// The candidates in order: the launch's own block as the tile (an output per thread, every block of
/// the user's grid busy), then launch variants of a block per tile in the spec's names, with the
/// halo the window reaches where the spec makes it constant (`width / 2`, `rad`, `taps` from `-pad`).
#[test]
fn window_tiles_follow_the_launch_and_the_windows_reach() {
    let cases = [
        ("boxfilter_batched_clamped.cu", "mean_filter"),
        ("boxfilter_single_wrapped.cu", "blur_padded"),
        ("maxpool_strided_guarded_taps.cu", "pool_max"),
    ];
    let got: Vec<String> = cases
        .iter()
        .flat_map(|(f, k)| {
            recipe("WindowTile").rewrite(&fixture(f), k).into_iter().map(move |rw| format!("{k}: {}", rw.note))
        })
        .collect();
    let want = [
        "mean_filter: 2D window over (y, x) of each image frame reading src through 8x32 shared output tiles with the window's halo of 2, an output per thread",
        "mean_filter: 2D window over (y, x) of each image frame reading src through 8x32 shared output tiles with the window's halo of 2, an output per thread, separable (row sums, then column sums)",
        "mean_filter: 2D window over (y, x) of each image frame reading src through 16x32 shared output tiles with the window's halo of 2, 2 outputs per thread; launch block = (32, 8, 1), grid = (ceil_div(COLS, 32), ceil_div(ROWS, 16), FRAMES)",
        "mean_filter: 2D window over (y, x) of each image frame reading src through 16x32 shared output tiles with the window's halo of 2, 2 outputs per thread, separable (row sums, then column sums); launch block = (32, 8, 1), grid = (ceil_div(COLS, 32), ceil_div(ROWS, 16), FRAMES)",
        "mean_filter: 2D window over (y, x) of each image frame reading src through 32x32 shared output tiles with the window's halo of 2, 4 outputs per thread; launch block = (32, 8, 1), grid = (ceil_div(COLS, 32), ceil_div(ROWS, 32), FRAMES)",
        "mean_filter: 2D window over (y, x) of each image frame reading src through 32x32 shared output tiles with the window's halo of 2, 4 outputs per thread, separable (row sums, then column sums); launch block = (32, 8, 1), grid = (ceil_div(COLS, 32), ceil_div(ROWS, 32), FRAMES)",
        "blur_padded: 2D window over (r, c) reading in_img through 16x16 shared output tiles with the window's halo of 2, an output per thread",
        "blur_padded: 2D window over (r, c) reading in_img through 16x16 shared output tiles with the window's halo of 2, an output per thread, separable (row sums, then column sums)",
        "blur_padded: 2D window over (r, c) reading in_img through 32x16 shared output tiles with the window's halo of 2, 2 outputs per thread; launch block = (16, 16), grid = (ceil_div(C, 16), ceil_div(R, 32))",
        "blur_padded: 2D window over (r, c) reading in_img through 32x16 shared output tiles with the window's halo of 2, 2 outputs per thread, separable (row sums, then column sums); launch block = (16, 16), grid = (ceil_div(C, 16), ceil_div(R, 32))",
        "blur_padded: 2D window over (r, c) reading in_img through 16x32 shared output tiles with the window's halo of 2, 2 outputs per thread; launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 16))",
        "blur_padded: 2D window over (r, c) reading in_img through 16x32 shared output tiles with the window's halo of 2, 2 outputs per thread, separable (row sums, then column sums); launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 16))",
        "blur_padded: 2D window over (r, c) reading in_img through 32x32 shared output tiles with the window's halo of 2, 4 outputs per thread; launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 32))",
        "blur_padded: 2D window over (r, c) reading in_img through 32x32 shared output tiles with the window's halo of 2, 4 outputs per thread, separable (row sums, then column sums); launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 32))",
        "pool_max: 2D window over (oy, ox) reading src through 4x32 shared output tiles with the window's halo of 1, an output per thread",
        "pool_max: 2D window over (oy, ox) reading src through 8x32 shared output tiles with the window's halo of 1, 2 outputs per thread; launch block = (32, 4), grid = (ceil_div(OW, 32), ceil_div(OH, 8))",
        "pool_max: 2D window over (oy, ox) reading src through 16x32 shared output tiles with the window's halo of 1, 2 outputs per thread; launch block = (32, 8), grid = (ceil_div(OW, 32), ceil_div(OH, 16))",
        "pool_max: 2D window over (oy, ox) reading src through 32x32 shared output tiles with the window's halo of 1, 4 outputs per thread; launch block = (32, 8), grid = (ceil_div(OW, 32), ceil_div(OH, 32))",
    ];
    assert_eq!(got, want);
}

/// A radius the spec's launches disagree on is not known: the halo is guessed (4, then 8) and any
/// read past it reads global memory as written.
#[test]
fn an_unknown_reach_keeps_the_guessed_halos() {
    let text = fixture("boxfilter_single_wrapped.cu")
        .replace("// kernelpro: rad = 2", "// kernelpro: tune RAD in [2, 3]\n// kernelpro: rad = RAD");
    let notes: Vec<String> = recipe("WindowTile").rewrite(&text, "blur_padded").into_iter().map(|rw| rw.note).collect();
    let guessed = |tile: &str, halo: u32, rest: &str| {
        format!(
            "2D window over (r, c) reading in_img through {tile} shared output tiles with a guessed halo of {halo}, {rest}"
        )
    };
    assert_eq!(
        notes,
        [
            guessed("16x16", 4, "an output per thread"),
            guessed("16x16", 8, "an output per thread"),
            guessed(
                "32x16",
                4,
                "2 outputs per thread; launch block = (16, 16), grid = (ceil_div(C, 16), ceil_div(R, 32))"
            ),
            guessed(
                "16x32",
                4,
                "2 outputs per thread; launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 16))"
            ),
            guessed(
                "32x32",
                4,
                "4 outputs per thread; launch block = (32, 8), grid = (ceil_div(C, 32), ceil_div(R, 32))"
            ),
        ]
    );
}

/// The separable form is a plain sum's only: a max window (or a weighted sum) keeps the square
/// window, a strided pool has no shared rows.
#[test]
fn only_plain_window_sums_are_separable() {
    use super::window::why_not_separable;
    let blur = fixture("boxfilter_batched_clamped.cu");
    let read = "src[frame * rows * cols + yy * cols + xx]";
    let max = blur.replace(&format!("acc += {read};"), &format!("acc = fmaxf(acc, {read});"));
    let weighted = blur.replace(&format!("acc += {read};"), &format!("acc += 0.5f * {read};"));
    assert_ne!(max, blur);
    assert_ne!(weighted, blur);
    let cases = [
        (blur.clone(), "mean_filter", None),
        (fixture("boxfilter_single_wrapped.cu"), "blur_padded", None),
        (max, "mean_filter", Some("the window is not a plain sum `acc += x[..]` (unit weights)")),
        (weighted, "mean_filter", Some("the window is not a plain sum `acc += x[..]` (unit weights)")),
        // A count of the taps beside the sum (its mean over the image's part): more than a sum.
        (
            fixture("boxblur_2d_window.cu"),
            "box_blur",
            Some("the window is not a plain sum `acc += x[..]` (unit weights)"),
        ),
        (
            fixture("maxpool_strided_guarded_taps.cu"),
            "pool_max",
            Some("a strided window (a pooling window) sums no shared rows"),
        ),
    ];
    for (text, kernel, want) in cases {
        assert_eq!(why_not_separable(&text, kernel).as_deref(), want, "{kernel}");
    }
    // The zero-padded blur's separable form: the tile zero outside the image, the rows' sums of 5,
    // then each output's column of them in place of the nest.
    let rws = recipe("WindowTile").rewrite(&fixture("boxfilter_single_wrapped.cu"), "blur_padded");
    let src = &rws[1].source;
    for want in [
        "__shared__ float kp_rows[20][16 + 1];",
        "kp_tile[kp_e / 20][kp_e % 20] = in_img[kp_r * (long long)(n_cols) + kp_c]; else kp_tile[kp_e / 20][kp_e % 20] = (float)0;",
        "for (int kp_d = 0; kp_d < 5; ++kp_d) kp_s += kp_tile[kp_e / 16][kp_e % 16 + kp_d];",
        "for (int kp_d = 0; kp_d < 5; ++kp_d) kp_s += kp_rows[kp_a + kp_d][kp_b];",
        "s += kp_window((int)(kp_ur - kp_u0), (int)(kp_uc - kp_v0));\n        out_img[r * n_cols + c] = s / ((2 * rad + 1) * (2 * rad + 1));",
    ] {
        assert!(src.contains(want), "{want}\n{src}");
    }
    assert!(!src.contains("for (int dr"), "{src}");
}

/// A radius from the file's `#define RADIUS 3` is constant: the halo is 3, not a guess.
#[test]
fn a_macro_radius_is_the_halo() {
    let rws = recipe("WindowTile").rewrite(&fixture("boxblur_2d_window.cu"), "box_blur");
    assert_eq!(
        rws[0].note,
        "2D window over (row, col) reading img through 16x16 shared output tiles with the window's halo of 3, an output per thread"
    );
}
