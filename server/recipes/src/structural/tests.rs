//! The structural rewrites on naive kernels written in several styles: which
//! rewrites apply to each (as data), every rewrite compiled with the real
//! nvcc, and snapshots of generated kernels.

use crate::{Recipe, all};
use expect_test::{Expect, expect};
use std::path::{Path, PathBuf};

pub(super) const STRUCTURAL: &[&str] = &[
    "WarpUnits",
    "BlockUnits",
    "ClusterUnits",
    "HoistRowWork",
    "WarpScan",
    "ColumnUnits",
    "TiledContraction",
    "BlockReduce",
    "PrivateHistogram",
    "SegmentWarps",
    "ShuffleTree",
    "StencilTile",
    "WindowTile",
    "BlockScan",
    "TiledTranspose",
    "GridStrideMap",
];

/// `naive/PATH` is the shared naive corpus (tests/fixtures/naive), `kbench/FILE` a KernelBench task, anything else this crate's fixtures/structural.
pub(super) fn fixture(name: &str) -> String {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = match (name.strip_prefix("naive/"), name.strip_prefix("kbench/")) {
        (Some(rest), _) => crate_dir.join("../../tests/fixtures/naive").join(rest),
        (_, Some(rest)) => crate_dir.join("../../bench/kernelbench/tasks").join(rest),
        _ => crate_dir.join("fixtures/structural").join(name),
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(super) fn recipe(name: &str) -> Box<dyn Recipe> {
    all().into_iter().find(|r| r.name() == name).unwrap_or_else(|| panic!("no recipe {name}"))
}

/// (fixture, kernel, the structural rewrites that apply with their candidate counts; empty: none).
const CORPUS: &[(&str, &str, &str)] = &[
    ("layernorm_rowptr.cu", "layernorm", "WarpUnits x8"),
    ("softmax_sizet.cu", "softmax_forward", "WarpUnits x8, BlockUnits x6"),
    ("argmax_long.cu", "argmax_rows", "WarpUnits x4"),
    ("embedding_gather.cu", "encoder_forward", "WarpUnits x4"),
    ("linear_bias.cu", "linear_forward", "WarpUnits x4, TiledContraction x10"),
    ("matmul_nn_rowptr.cu", "sgemm_naive", "WarpUnits x8, TiledContraction x6"),
    ("sum_atomic.cu", "sum_squares", "BlockReduce x8"),
    ("gelu_map.cu", "gelu_forward", "GridStrideMap x11"),
    ("row_loss.cu", "crossentropy", "WarpUnits x4"),
    ("cumsum_2d_double.cu", "cumsum_y", "WarpScan x10"),
    ("colmax_2d_sizet.cu", "colmax", "WarpUnits x4, ColumnUnits x4"),
    ("cumsum_template_macro.cu", "scaled_exclusive_cumsum", "WarpScan x10"),
    // Styles of a public repository's plain kernels (LeetCUDA), written anew.
    ("transpose_split_before_guard.cu", "transpose_gather", "TiledTranspose x2, GridStrideMap x4"),
    ("sgemm_pragma_guard_block.cu", "gemm_unrolled", "WarpUnits x4, TiledContraction x6"),
    ("dot_template_block_atomic.cu", "dot_block", ""),
    // Other KernelBench-like operations in styles of their own.
    ("bmm_batch_z.cu", "bmm", "WarpUnits x4, TiledContraction x10"),
    ("matmul_bt_flat.cu", "matmul_bt", "WarpUnits x4, TiledContraction x10"),
    // A window loop: no structural rewrite yet (no 2D/strided window tile); L1 serves its reuse.
    ("avgpool1d_stride2.cu", "avg_pool1d", "GridStrideMap x4"),
    ("instnorm_thread_plane.cu", "instance_norm", "WarpUnits x4, BlockUnits x3"),
    ("min_middle_dim_long.cu", "min_dim1", "WarpUnits x4, ColumnUnits x4"),
    ("cosine_rows_three_sums.cu", "cosine_sim_loss", "WarpUnits x4"),
    // Coarsened by CoarsenReduce (a rewrite of the micro tier), see crate::tests::coarsen_reduce.
    ("sumsq_shared_literal_tree.cu", "sum_squares", ""),
    ("leaky_relu_idx_macro.cu", "leaky_relu", "GridStrideMap x11"),
    ("cumprod_rows_inline.cu", "cumprod_rows", "WarpScan x10"),
    ("reverse_cumsum_guard_block.cu", "reverse_cumsum", "WarpScan x10, GridStrideMap x4"),
    ("masked_cumsum_bytes.cu", "masked_cumsum", "WarpScan x10"),
    ("prod_middle_dim.cu", "prod_dim1", "WarpUnits x4, ColumnUnits x4"),
    ("prod_last_dim.cu", "prod_last", "WarpUnits x4"),
    ("while_grid_stride_map.cu", "while_map", "GridStrideMap x11"),
    ("tid_alias_early_return.cu", "early_map", "GridStrideMap x11"),
    ("triu_matmul_guarded_loop.cu", "triu_matmul", "TiledContraction x6"),
    ("conv_pointwise_grid_y.cu", "conv_pointwise", "WarpUnits x4, TiledContraction x10"),
    ("conv1x1_block_2d.cu", "conv1x1", "WarpUnits x4, TiledContraction x10"),
    ("gemm_hand_mapped_1d_block.cu", "gemm_hand_mapped", "WarpUnits x4, TiledContraction x6"),
    ("softmax_online_thread_row.cu", "softmax_online", "WarpUnits x4"),
    // The textbook block tree: a zeroed slot loaded under a guard, a barrier after the tree.
    ("reduce0_zero_then_guarded.cu", "reduce_base", "SegmentWarps x3, ShuffleTree x1"),
    // A thread per element recomputing its row's statistics: inline (flat index, double) or in a helper (2D, long).
    ("center_rows_flat_sizet.cu", "center_rows", "WarpUnits x8, HoistRowWork x8"),
    ("absmax_scale_helper_rowy.cu", "scale_by_row_absmax", "HoistRowWork x7, GridStrideMap x4"),
    // Styles found in other people's public naive kernels, written anew by the corpus helper.
    ("add2d_rows_on_x.cu", "add_matrix_rows_x", "GridStrideMap x4"),
    ("gelu_short_macros.cu", "gelu_macros", "GridStrideMap x11"),
    ("rmsnorm_brace_template.cu", "rms_rows_brace", "WarpUnits x4, BlockUnits x3"),
    ("rowsum_pointer_while.cu", "row_means_ptr", "WarpUnits x4"),
    ("scale_template_specialised.cu", "scale_copy", "GridStrideMap x4"),
    // A Welford recurrence per row, read as two passes: a warp per row.
    ("layernorm_welford_row.cu", "layernorm_welford", "WarpUnits x4"),
    // A 3x3 window: 32x32 output tiles, the input through a shared tile with a halo.
    ("boxblur_2d_window.cu", "box_blur", "StencilTile x2, WindowTile x4"),
    // Each thread owns a section of the input: read as a grid-stride loop, then per-block bins.
    ("hist_block_partitioned.cu", "histo_sectioned", "PrivateHistogram x4"),
    // A loop over a tile's rows with no guard, its extent the launch's grid: a thread per element, then a shared tile.
    ("transpose_tile_rows_loop.cu", "transpose_rows_loop", "TiledTranspose x2, GridStrideMap x4"),
    // Views of other people's styles (`source::units::views`), written anew by the corpus helper: no guard
    // under an exact launch, index locals, a guard written twice, a Kahan sum, a loop starting at an alias.
    ("sgemm_no_guard_exact_launch.cu", "gemm_exact", "WarpUnits x4, TiledContraction x10"),
    ("conv1d_taps_guarded_only.cu", "conv1d_taps_only", "StencilTile x4, GridStrideMap x4"),
    ("transpose_index_locals_macro.cu", "transpose_locals", "TiledTranspose x1, GridStrideMap x4"),
    ("transpose_index_locals_guarded.cu", "transpose_locals_guarded", "TiledTranspose x2, GridStrideMap x4"),
    ("matmul_split_guards.cu", "matmul_twice_guarded", "WarpUnits x4, TiledContraction x10"),
    ("rowsum_kahan.cu", "rowsum_kahan", "WarpUnits x4"),
    ("hist_tid_alias_gridstride.cu", "hist_alias", "PrivateHistogram x4"),
    // A sum kept in global memory (an int matmul, no guard, an exact launch): kept in a register, then tiled.
    ("matmul_int_accumulate_in_global.cu", "imatmul_global_sum", "WarpUnits x4, TiledContraction x10"),
    // A loop over a tile's rows whose row length is the launch's (`gridDim.x * TD`): the launch is kept.
    ("transpose_rows_loop_grid_width.cu", "transpose_grid_width", "TiledTranspose x1, GridStrideMap x1"),
    // Every thread of a row's blocks recomputes and stores the whole row: one unit per row.
    ("softmax_every_thread_whole_row.cu", "softmax_redundant", "WarpUnits x4, BlockUnits x3"),
    // The shared naive corpus: every naive style gets its class's rewrite (`naive_corpus_is_covered`
    // keeps it so); clean and expert twins get none but the grid-stride map (a launch change).
    ("naive/argmax/argmax_gridstride_sizet.cu", "row_argmax", "WarpUnits x4"),
    ("naive/argmax/argmax_rowptr.cu", "argmax_rows_v1", "WarpUnits x4"),
    ("naive/argmax/argmax_template_macro.cu", "argmax_kernel", "WarpUnits x4"),
    ("naive/argmax/clean_argmax_block.cu", "argmax_block_row", ""),
    ("naive/argmax/expert_argmax_warp.cu", "argmax_warp_row", ""),
    ("naive/block_reduce/clean_reduce_sequential.cu", "reduce_sequential", ""),
    ("naive/block_reduce/expert_reduce_shuffle.cu", "reduce_shuffle", ""),
    ("naive/block_reduce/reduce_bitmask_template.cu", "block_reduce", "SegmentWarps x3, ShuffleTree x1"),
    ("naive/block_reduce/reduce_interleaved_index.cu", "block_sum_strided", "SegmentWarps x3, ShuffleTree x1"),
    ("naive/block_reduce/reduce_interleaved_mod.cu", "reduce0", "SegmentWarps x3, ShuffleTree x1"),
    ("naive/copy/clean_scale_2d.cu", "scale_2d", "GridStrideMap x4"),
    ("naive/copy/copy_2d_rowx_sizet.cu", "copy2d", "GridStrideMap x4"),
    ("naive/copy/copy_rowwalk_scale.cu", "scale_rows", "WarpUnits x4"),
    // Its __launch_bounds__(256) rules out the 512- and 1024-thread launch variants (they failed to launch).
    ("naive/copy/expert_scale_vec4.cu", "scale_vec4", "GridStrideMap x1"),
    ("naive/copy/take_strided_long.cu", "take_every", "GridStrideMap x4"),
    ("naive/embedding/clean_encoder_channel.cu", "encoder_channel", "GridStrideMap x4"),
    ("naive/embedding/embedding_2d_sizet.cu", "embedding_lookup", "WarpUnits x4"),
    ("naive/embedding/encoder_rowptr.cu", "encoder_forward_v1", "WarpUnits x4"),
    ("naive/embedding/expert_encoder_vec4.cu", "encoder_vec4", "GridStrideMap x4"),
    ("naive/embedding/gather_template_gridstride.cu", "gather_rows", "WarpUnits x4"),
    ("naive/histogram/clean_hist_shared_bins.cu", "byte_histogram_shared", ""),
    ("naive/histogram/expert_hist_warp_private_u4.cu", "byte_histogram_private", ""),
    ("naive/histogram/hist_image_2d_sizet.cu", "image_hist", "PrivateHistogram x4"),
    ("naive/histogram/hist_int_shift.cu", "histo_shift", "PrivateHistogram x4"),
    ("naive/histogram/hist_u8_gridstride.cu", "byte_histogram", "PrivateHistogram x4"),
    ("naive/layernorm/clean_layernorm_block.cu", "layernorm_block_row", ""),
    ("naive/layernorm/expert_layernorm_warp.cu", "layernorm_warp_row", ""),
    ("naive/layernorm/layernorm_btc2d_sizet.cu", "ln_fwd_btc", "WarpUnits x4"),
    ("naive/layernorm/layernorm_macro_double.cu", "layer_norm_kernel", "WarpUnits x8"),
    ("naive/layernorm/layernorm_rowptr.cu", "layernorm_forward_v1", "WarpUnits x4"),
    ("naive/linear/clean_linear_tiled16.cu", "linear_tiled16", ""),
    ("naive/linear/dense_kout_relu_sizet.cu", "dense_relu", "WarpUnits x4, TiledContraction x10"),
    ("naive/linear/expert_linear_tile64_reg4x4.cu", "linear_tile64", ""),
    ("naive/linear/linear_rowptr_bias.cu", "matmul_forward_v1", "WarpUnits x4, TiledContraction x10"),
    ("naive/linear/linear_template_gelu.cu", "linear_gelu", "WarpUnits x4, TiledContraction x4"),
    ("naive/map/clean_gelu_vec4.cu", "gelu_vec4", ""),
    ("naive/map/expert_gelu_vec4_gridstride.cu", "gelu_stream", ""),
    ("naive/map/gelu_double_literals.cu", "gelu_kernel", "GridStrideMap x11"),
    ("naive/map/gelu_tanh_v1.cu", "gelu_forward_v1", "GridStrideMap x11"),
    ("naive/map/relu_bias_2d_rowx.cu", "bias_relu", "GridStrideMap x4"),
    ("naive/map/swish_gridstride_sizet.cu", "swish_kernel", "GridStrideMap x11"),
    ("naive/matmul/clean_sgemm_tiled16.cu", "sgemm_tiled16", ""),
    ("naive/matmul/expert_sgemm_tile64_reg4x4.cu", "sgemm_tile64", ""),
    ("naive/matmul/matmul_1d_double_sizet.cu", "matmul_flat", "WarpUnits x8, TiledContraction x6"),
    ("naive/matmul/mm_rowx.cu", "mm_kernel", "WarpUnits x4, TiledContraction x6"),
    ("naive/matmul/sgemm_naive_rowy.cu", "sgemm_naive", "WarpUnits x4, TiledContraction x10"),
    ("naive/rmsnorm/clean_rmsnorm_block.cu", "rmsnorm_block_row", ""),
    ("naive/rmsnorm/expert_rmsnorm_warp_vec4.cu", "rmsnorm_warp_vec4", ""),
    ("naive/rmsnorm/rmsnorm_gridstride_sizet.cu", "rms_norm_kernel", "WarpUnits x4"),
    ("naive/rmsnorm/rmsnorm_rowptr_long.cu", "rmsnorm_fwd", "WarpUnits x4"),
    ("naive/rmsnorm/rmsnorm_template_rowy.cu", "rms_norm", "WarpUnits x4"),
    ("naive/softmax/clean_softmax_block.cu", "softmax_block_row", ""),
    ("naive/softmax/crossentropy_rowptr.cu", "crossentropy_forward", "WarpUnits x4"),
    ("naive/softmax/expert_softmax_online_warp.cu", "softmax_online_warp", ""),
    ("naive/softmax/softmax_attn2d_long.cu", "attn_softmax", "WarpUnits x4"),
    ("naive/softmax/softmax_devfn_elem2d.cu", "softmax_per_element", "HoistRowWork x7, GridStrideMap x4"),
    ("naive/softmax/softmax_inplace_loc.cu", "softmax_inplace", "WarpUnits x4, BlockUnits x3"),
    ("naive/softmax/softmax_rowptr_double.cu", "softmax_forward_v1", "WarpUnits x8, BlockUnits x6"),
    ("naive/softmax/softmax_template_grid.cu", "softmax_naive", "WarpUnits x4, BlockUnits x3"),
    ("naive/stencil/clean_conv1d_tile_halo.cu", "conv1d_tiled", ""),
    ("naive/stencil/conv1d_template_gridstride.cu", "conv1d_same", "StencilTile x4, GridStrideMap x4"),
    ("naive/stencil/conv1d_v1.cu", "conv1d_v1", "StencilTile x4, GridStrideMap x4"),
    ("naive/stencil/conv3x3_macro_2d.cu", "conv3x3", "StencilTile x2, GridStrideMap x4"),
    ("naive/stencil/expert_conv1d_tile_4out.cu", "conv1d_tile4", ""),
    ("naive/stencil/jacobi_rowx.cu", "jacobi_step", "GridStrideMap x4"),
    // One block per 256 elements into one atomic each: the same form ran at 0.18x of PyTorch on the
    // H100 corpus run (corpus_bruce_reduce_atomic); BlockReduce gives it a grid-stride register sum.
    ("naive/sum/clean_sum_block_atomic.cu", "sum_block_atomic", "BlockReduce x4"),
    ("naive/sum/count_gridstride_int_sizet.cu", "total_kernel", "BlockReduce x4"),
    ("naive/sum/expert_sum_shuffle_gridstride.cu", "sum_shuffle", ""),
    ("naive/sum/mse_atomic_scaled.cu", "mse_loss_kernel", "BlockReduce x8"),
    ("naive/sum/reduce_template_grid2d_long.cu", "reduce_sum_atomic", "BlockReduce x4"),
    ("naive/sum/sum_atomic_1d.cu", "sum_atomic", "BlockReduce x8"),
    ("naive/sum/sumsq_double_atomic.cu", "sumsq", "BlockReduce x8"),
    ("naive/transpose/clean_transpose_tile.cu", "transpose_tile32", ""),
    ("naive/transpose/expert_transpose_tile_rows.cu", "transpose_tile_rows", ""),
    ("naive/transpose/transpose_1d_divmod.cu", "transpose_flat", "TiledTranspose x2, GridStrideMap x4"),
    ("naive/transpose/transpose_2d_naive.cu", "transpose_v1", "TiledTranspose x2, GridStrideMap x4"),
    ("naive/transpose/transpose_macro_rowx_long.cu", "transpose_kernel", "TiledTranspose x2, GridStrideMap x4"),
    // KernelBench level-1 tasks: 2D convolutions (82) get none yet;
    // few long rows (128 of 393216 in 23, 24) also get a block per row.
    ("kbench/100_HingeLoss.cu", "hinge_loss", "BlockReduce x4"),
    ("kbench/19_ReLU.cu", "relu", "GridStrideMap x11"),
    ("kbench/1_Square_matmul.cu", "matmul_square", "WarpUnits x4, TiledContraction x10"),
    ("kbench/14_Matmul_upper_triangular.cu", "triu_matmul", "TiledContraction x6"),
    ("kbench/15_Matmul_lower_triangular.cu", "tril_matmul", "TiledContraction x6"),
    ("kbench/21_Sigmoid.cu", "sigmoid", "GridStrideMap x11"),
    ("kbench/23_Softmax.cu", "softmax_rows", "WarpUnits x8, BlockUnits x6, ClusterUnits x12"),
    ("kbench/24_LogSoftmax.cu", "log_softmax_rows", "WarpUnits x8, BlockUnits x6, ClusterUnits x12"),
    ("kbench/25_Swish.cu", "swish", "GridStrideMap x11"),
    ("kbench/26_GELU.cu", "gelu", "GridStrideMap x11"),
    ("kbench/30_Softsign.cu", "softsign", "GridStrideMap x11"),
    // Already coalesced over a million positions; a warp per position reads its 64 features H*W apart (0.25x measured).
    ("kbench/36_RMSNorm.cu", "rms_norm", ""),
    ("kbench/40_LayerNorm.cu", "layer_norm_rows", "WarpUnits x8, BlockUnits x6, ClusterUnits x12"),
    // A 4x4 window: a warp per output would idle 28 of 32 lanes (0.06x measured); no 2D tile yet.
    ("kbench/42_Max_Pooling_2D.cu", "max_pool2d", "GridStrideMap x4"),
    ("kbench/47_Sum_reduction.cu", "sum_dim1", "WarpUnits x4, ColumnUnits x4"),
    ("kbench/48_Mean_reduction.cu", "mean_dim1", "ColumnUnits x4"),
    ("kbench/4_Matrix_vector.cu", "matvec", "WarpUnits x4, BlockUnits x3"),
    ("kbench/50_Product_reduction.cu", "prod_dim1", "WarpUnits x4, ColumnUnits x4"),
    ("kbench/51_Argmax.cu", "argmax_dim1", "WarpUnits x4, ColumnUnits x4"),
    ("kbench/82_conv_depthwise_2D.cu", "depthwise_conv2d", "GridStrideMap x4"),
    ("kbench/88_MinGPTNewGelu.cu", "new_gelu", "GridStrideMap x11"),
    ("kbench/89_cumsum.cu", "cumsum_rows", "WarpScan x10"),
    ("kbench/90_cumprod.cu", "cumprod_rows", "WarpScan x10"),
    ("kbench/91_cumsum_reverse.cu", "reverse_cumsum_rows", "WarpScan x10, GridStrideMap x4"),
    ("kbench/92_cumsum_exclusive.cu", "exclusive_cumsum_rows", "WarpScan x10"),
    ("kbench/93_masked_cumsum.cu", "masked_cumsum_rows", "WarpScan x10"),
    ("kbench/94_MSELoss.cu", "mse_loss", "BlockReduce x8"),
];

pub(super) fn applied(file: &str, kernel: &str) -> String {
    let text = fixture(file);
    STRUCTURAL
        .iter()
        .filter_map(|name| {
            let n = recipe(name).rewrite(&text, kernel).len();
            (n > 0).then(|| format!("{name} x{n}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn each_kernel_gets_its_structural_rewrite() {
    let got: Vec<(&str, &str, String)> = CORPUS.iter().map(|(f, k, _)| (*f, *k, applied(f, k))).collect();
    let want: Vec<(&str, &str, String)> = CORPUS.iter().map(|(f, k, w)| (*f, *k, w.to_string())).collect();
    assert_eq!(got, want);
}

/// Templates get the micro rewrites too (they were skipped: a template block reduction got no candidate at all).
#[test]
fn template_kernels_get_micro_rewrites() {
    let text = fixture("dot_template_block_atomic.cu");
    let got: Vec<&str> = ["RestrictConst", "LaunchBounds", "PragmaUnroll"]
        .into_iter()
        .filter(|name| !recipe(name).rewrite(&text, "dot_block").is_empty())
        .collect();
    assert_eq!(got, ["RestrictConst", "LaunchBounds", "PragmaUnroll"]);
    for name in got {
        for rw in recipe(name).rewrite(&text, "dot_block") {
            if let Some(e) = compile_errors(&rw.source) {
                panic!("{name} ({}):\n{e}", rw.note);
            }
        }
    }
}

/// Naive corpus files (tests/fixtures/naive, not clean_/expert_) that no structural rewrite answers, each with why.
const NOT_COVERED: &[(&str, &str)] = &[];

/// Clean kernels that a structural rewrite still answers, each with why.
const CLEAN_REWRITTEN: &[(&str, &str)] = &[(
    "naive/sum/clean_sum_block_atomic.cu",
    "a block tree per 256 elements, one atomic each: 0.18x of PyTorch in the same form on the H100 corpus run",
)];

/// Every naive style of the shared corpus gets a structural rewrite and is in [`CORPUS`]; clean and
/// expert kernels get none but the grid-stride map (whose only change that matters is the launch).
#[test]
fn naive_corpus_is_covered() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/naive");
    let mut classes: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    classes.sort();
    let mut wrong = Vec::new();
    let mut naive = 0;
    for class in classes {
        let mut files: Vec<String> = std::fs::read_dir(&class)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".cu"))
            .collect();
        files.sort();
        for file in files {
            let rel = format!("naive/{}/{file}", class.file_name().unwrap().to_string_lossy());
            let text = fixture(&rel);
            let kernels: Vec<String> = kernelpro_source::parse(&text).kernels().map(|k| k.name.clone()).collect();
            let got: Vec<String> = kernels.iter().map(|k| applied(&rel, k)).filter(|a| !a.is_empty()).collect();
            if file.starts_with("clean_") || file.starts_with("expert_") {
                if !CLEAN_REWRITTEN.iter().any(|(f, _)| *f == rel)
                    && got.iter().any(|a| a.split(", ").any(|r| !r.starts_with("GridStrideMap")))
                {
                    wrong.push(format!("{rel}: a clean/expert kernel gets {got:?}"));
                }
                continue;
            }
            naive += 1;
            if !CORPUS.iter().any(|(f, k, _)| *f == rel && kernels.contains(&k.to_string())) {
                wrong.push(format!("{rel}: not in CORPUS"));
            }
            match (got.is_empty(), NOT_COVERED.iter().any(|(f, _)| *f == rel)) {
                (true, false) => wrong.push(format!("{rel}: no structural rewrite applies")),
                (false, true) => wrong.push(format!("{rel}: covered now, drop it from NOT_COVERED")),
                _ => {}
            }
        }
    }
    assert!(naive >= 49, "only {naive} naive files found under {}", root.display());
    assert!(wrong.is_empty(), "{wrong:#?}");
}

pub(crate) fn nvcc() -> PathBuf {
    let path = std::env::var_os("KERNELPRO_NVCC").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc")
    });
    assert!(path.exists(), "nvcc not found at {}: set KERNELPRO_NVCC", path.display());
    path
}

/// `source` with the spec's `instantiate = K<ARGS>` compiled in (nvcc checks a template only where it is instantiated).
pub(crate) fn instantiated(source: &str) -> String {
    let mut out = source.to_string();
    for (n, inst) in source
        .lines()
        .filter_map(|l| {
            l.trim().strip_prefix("// kernelpro:")?.trim().strip_prefix("instantiate")?.trim().strip_prefix('=')
        })
        .enumerate()
    {
        out.push_str(&format!("\nstatic void* kp_instantiate_{n} = (void*)&{};\n", inst.trim()));
    }
    out
}

/// nvcc's errors for `source` (with its spec's instantiation), `None` when it compiles for sm_90.
pub(crate) fn compile_errors(source: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("k.cu");
    std::fs::write(&cu, instantiated(source)).unwrap();
    let out = std::process::Command::new(nvcc())
        .args(["-arch=sm_90", "-cubin", "-o"])
        .arg(cu.with_extension("cubin"))
        .arg(&cu)
        .output()
        .unwrap();
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The rewrites with distinct code: launch variants differ only in spec comments, one of them is compiled.
pub(super) fn distinct_code(rewrites: &[crate::Rewrite]) -> Vec<&crate::Rewrite> {
    let mut seen = std::collections::HashSet::new();
    rewrites
        .iter()
        .filter(|rw| {
            let code: Vec<&str> = rw.source.lines().filter(|l| !l.trim_start().starts_with("// kernelpro:")).collect();
            seen.insert(code.join("\n"))
        })
        .collect()
}

/// Every structural recipe's distinct candidates on each (fixture, kernel), compiled for sm_90:
/// how many were compiled, and each failure with its source.
pub(super) fn compile_structural<'a>(cases: impl IntoIterator<Item = (&'a str, &'a str)>) -> (usize, Vec<String>) {
    let (mut compiled, mut failed) = (0, Vec::new());
    for (file, kernel) in cases {
        let text = fixture(file);
        for name in STRUCTURAL {
            for rw in distinct_code(&recipe(name).rewrite(&text, kernel)) {
                compiled += 1;
                if let Some(e) = compile_errors(&rw.source) {
                    failed.push(format!("{name} on {file} ({}):\n{e}\n{}", rw.note, rw.source));
                }
            }
        }
    }
    (compiled, failed)
}

#[test]
fn every_structural_rewrite_compiles_for_sm_90() {
    let (_, failed) = compile_structural(CORPUS.iter().map(|(file, kernel, _)| (*file, *kernel)));
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The bundled example's GridStrideMap candidates (float4 and scalar) compile
/// with nothing on nvcc's stderr: the float4 one bound the unit's index in
/// each component though no statement named it any more (#177-D, "declared
/// but never referenced", on every applied candidate).
#[test]
fn grid_stride_saxpy_compiles_without_warnings() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/saxpy.cu");
    let text = std::fs::read_to_string(path).unwrap();
    let rewrites = recipe("GridStrideMap").rewrite(&text, "saxpy");
    let distinct = distinct_code(&rewrites);
    assert!(distinct.iter().any(|rw| rw.note.contains("128-bit")), "no float4 candidate: {rewrites:#?}");
    for rw in distinct {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("saxpy.cu");
        std::fs::write(&cu, &rw.source).unwrap();
        let out = std::process::Command::new(nvcc())
            .args(["-arch=sm_90", "-cubin", "-o"])
            .arg(cu.with_extension("cubin"))
            .arg(&cu)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.trim().is_empty(), "{}: nvcc said\n{stderr}\n{}", rw.note, rw.source);
    }
}

/// The first rewrite's kernel (from its spec block on) and every rewrite's note.
pub(super) fn generated(file: &str, kernel: &str, name: &str) -> String {
    let text = fixture(file);
    let rws = recipe(name).rewrite(&text, kernel);
    let Some(first) = rws.first() else {
        return "no rewrite\n".into();
    };
    let notes: String = rws.iter().map(|r| format!("## {}\n", r.note)).collect();
    let start = first.source.find("__global__").unwrap_or(0);
    format!("{notes}{}", &first.source[start..])
}

fn check(file: &str, kernel: &str, name: &str, expected: Expect) {
    expected.assert_eq(&generated(file, kernel, name));
}

#[test]
fn snapshots() {
    check(
        "naive/transpose/transpose_2d_naive.cu",
        "transpose_v1",
        "TiledTranspose",
        expect![[r#"
            ## 32x33 shared tiles: loads along col, stores along row
            ## 32x33 shared tiles: loads along col, stores along row; launch block = 256, grid = ceil_div((COLS) * (ROWS), 1024)
            __global__ void transpose_v1(float* out, const float* inp, int rows, int cols) {
              // 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
              __shared__ float kp_tile[32][33];
              const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
              const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
              const long long kp_tiles_j = ((long long)(rows) + 31) / 32;
              const long long kp_tiles = ((long long)(cols) + 31) / 32 * kp_tiles_j;
              for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
                const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
                for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
                  const int kp_r = kp_e % 32, kp_c = kp_e / 32;
                  const int col = (int)(kp_i0 + kp_r);
                  const int row = (int)(kp_j0 + kp_c);
                  if (col < cols && row < rows) kp_tile[kp_r][kp_c] = inp[row * cols + col];
                }
                __syncthreads();
                for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
                  const int kp_r = kp_e / 32, kp_c = kp_e % 32;
                  const int col = (int)(kp_i0 + kp_r);
                  const int row = (int)(kp_j0 + kp_c);
                  if (col < cols && row < rows) {
                    out[col * rows + row] = kp_tile[kp_r][kp_c];
                  }
                }
                __syncthreads();
              }
            }
        "#]],
    );
    check(
        "gelu_map.cu",
        "gelu_forward",
        "GridStrideMap",
        expect![[r#"
            ## grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 256, grid = ceil_div(N, 1024)
            ## grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 256, grid = min(ceil_div(N, 256), 132 * 8)
            ## grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 512, grid = min(ceil_div(N, 512), 132 * 4)
            ## grid-stride map over (i), four units a step through 128-bit streaming loads and stores; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 2)
            ## grid-stride map over (i), four units a step through 128-bit streaming loads and stores
            ## grid-stride map over (i), two float4 of units a thread a step through 128-bit streaming loads and stores; launch block = 256, grid = ceil_div(N, 2048)
            ## grid-stride map over (i), two float4 of units a thread a step through 128-bit streaming loads and stores; launch block = 512, grid = ceil_div(N, 4096)
            ## grid-stride map over (i)
            ## grid-stride map over (i); launch block = 256, grid = min(ceil_div(N, 256), 132 * 8)
            ## grid-stride map over (i); launch block = 512, grid = min(ceil_div(N, 512), 132 * 4)
            ## grid-stride map over (i); launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 2)
            __global__ void gelu_forward(float* out, const float* inp, int N_) {
              // grid-stride over the units, four a step through float4 where aligned (kernelpro).
              const long long kp_n4 = (((unsigned long long)(inp) | (unsigned long long)(out)) % 16 == 0) ? ((long long)(N_)) / 4 : 0;
              for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < kp_n4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
                const float4 kp_i_inp = __ldcs(reinterpret_cast<const float4*>(inp) + kp_v);
                float4 kp_o_out;
                {
                  float xi = kp_i_inp.x;
                  float cube = 0.044715f * xi * xi * xi;
                  kp_o_out.x = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
                }
                {
                  float xi = kp_i_inp.y;
                  float cube = 0.044715f * xi * xi * xi;
                  kp_o_out.y = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
                }
                {
                  float xi = kp_i_inp.z;
                  float cube = 0.044715f * xi * xi * xi;
                  kp_o_out.z = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
                }
                {
                  float xi = kp_i_inp.w;
                  float cube = 0.044715f * xi * xi * xi;
                  kp_o_out.w = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
                }
                __stcs(reinterpret_cast<float4*>(out) + kp_v, kp_o_out);
              }
              for (long long kp_u = kp_n4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(N_); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
                const int i = (int)(kp_u);
                float xi = inp[i];
                float cube = 0.044715f * xi * xi * xi;
                out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
              }
            }
        "#]],
    );
    // Batch on blockIdx.y kept from the launch; tokens on x walked by warps.
    check(
        "naive/layernorm/layernorm_btc2d_sizet.cu",
        "ln_fwd_btc",
        "WarpUnits",
        expect![[r#"
            ## one warp per unit (t): 2 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = (min(ceil_div(SEQ, 8), 132 * 16), BATCH)
            ## one warp per unit (t): 2 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = (min(ceil_div(SEQ, 4), 132 * 32), BATCH)
            ## one warp per unit (t): 2 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = (min(ceil_div(SEQ, 16), 132 * 8), BATCH)
            ## one warp per unit (t): 2 loop(s) split across lanes, shuffle all-reductions
            __global__ void ln_fwd_btc(float* out, const float* inp, const float* gamma, const float* beta, int T, int C) {
              // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
              const int bidx = (int)blockIdx.y;
              const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
              const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
              for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(T); kp_u += kp_warps) {
                const int t = (int)(kp_u);
                size_t base = ((size_t)bidx * T + t) * C;
                float sum = 0.f, sumsq = 0.f;
                if (kp_lane != 0) sum = 0;
                if (kp_lane != 0) sumsq = 0;
                for (int c = 0 + kp_lane; c < C; c += 32) {
                  float v = inp[base + c]; // expect: UncoalescedAccess|RowWalk
                  sum += v;
                  sumsq += v * v;
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sumsq += __shfl_xor_sync(0xffffffffu, sumsq, kp_o);
                float mu = sum / C;
                float var = sumsq / C - mu * mu;
                float inv = rsqrtf(var + 1e-5f);
                for (int c = 0 + kp_lane; c < C; c += 32) {
                  out[base + c] = (inp[base + c] - mu) * inv * gamma[c] + beta[c];
                }
                __syncwarp();
              }
            }
        "#]],
    );
    check(
        "layernorm_rowptr.cu",
        "layernorm",
        "WarpUnits",
        expect![[r#"
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions, double accumulators as float; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions, double accumulators as float; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions, double accumulators as float; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions, double accumulators as float
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
            ## one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions
            __global__ void layernorm(float* y, const float* x, const float* w, const float* b, int rows, int cols) {
              // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
              const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
              const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
              for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
                const int row = (int)(kp_u);
                const float* xr = x + row * cols;
                float* yr = y + row * cols;
                float sum = 0.0f;
                if (kp_lane != 0) sum = 0;
                for (int c = 0 + kp_lane; c < cols; c += 32) {
                  sum += xr[c];
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
                float mean = sum / cols;
                float var = 0.0f;
                if (kp_lane != 0) var = 0;
                for (int c = 0 + kp_lane; c < cols; c += 32) {
                  float d = xr[c] - mean;
                  var += d * d;
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) var += __shfl_xor_sync(0xffffffffu, var, kp_o);
                float rstd = 1.0f / sqrt(var / cols + 1e-5f);
                for (int c = 0 + kp_lane; c < cols; c += 32) {
                  yr[c] = (float)((xr[c] - mean) * rstd) * w[c] + b[c];
                }
                __syncwarp();
              }
            }
        "#]],
    );
    check(
        "argmax_long.cu",
        "argmax_rows",
        "WarpUnits",
        expect![[r#"
            ## one warp per unit (r): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
            ## one warp per unit (r): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
            ## one warp per unit (r): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
            ## one warp per unit (r): 1 loop(s) split across lanes, shuffle all-reductions
            __global__ void argmax_rows(int* idx_out, const float* x, long rows, long cols) {
              // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
              const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
              const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
              for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
                const long r = (long)(kp_u);
                float best = x[r * cols];
                int arg = 0;
                for (long c = 1 + kp_lane; c < cols; c += 32) {
                  float v = x[r * cols + c];
                  if (v > best) {
                    best = v;
                    arg = c;
                  }
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, best, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, arg, kp_o); if (kp_t > best || (kp_t == best && kp_j < arg)) { best = kp_t; arg = kp_j; } }
                if (kp_lane == 0) {
                  idx_out[r] = arg;
                }
                __syncwarp();
              }
            }
        "#]],
    );
    check(
        "linear_bias.cu",
        "linear_forward",
        "TiledContraction",
        expect![[r###"
            ## 128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
            ## 128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2)
            ## 64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction
            ## 128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
            ## 64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
            ## 128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (OUT), 16384)
            ## 128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((M) * (OUT), 16384)
            ## 64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction; launch block = 256, grid = ceil_div((M) * (OUT), 4096)
            ## 128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (OUT), 8192)
            ## 64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (OUT), 8192)
            __global__ void linear_forward(float* y, const float* x, const float* w, const float* b, int m, int k, int n) {
              // SIMT GEMM (kernelpro TiledContraction): 128x128 tiles, 8 deep, 8x8 outputs a thread, 256 threads a block, two shared buffers an operand, the next slice fetched into registers while this one is multiplied.
              __shared__ __align__(16) float kp_As[2][8][128 + 4];
              __shared__ __align__(16) float kp_Bs[2][8][128 + 4];
              const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
              // A warp is 4x8 threads of the 16x16 grid: one A vector and eight consecutive B vectors a quarter-warp.
              const int kp_warp = kp_tid / 32, kp_lane = kp_tid % 32;
              const int kp_tr = kp_warp / 2 * 4 + kp_lane / 8, kp_tc = kp_warp % 2 * 8 + kp_lane % 8;
              // The tiles take 256 threads: those of a larger block skip them (the named barrier counts 256).
              const bool kp_on = kp_tid < 256;
              const long long kp_tiles_n = ((long long)(n) + 128 - 1) / 128;
              const long long kp_tiles = ((long long)(m) + 128 - 1) / 128 * kp_tiles_n;
              for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_on && kp_t < kp_tiles; kp_t += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
                const long long kp_m0 = kp_t / kp_tiles_n * 128, kp_n0 = kp_t % kp_tiles_n * 128;
                float kp_acc[8][8];
                #pragma unroll
                for (int kp_a = 0; kp_a < 8; ++kp_a) {
                  #pragma unroll
                  for (int kp_b = 0; kp_b < 8; ++kp_b) {
                    const int i = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
                    const int j = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
                    kp_acc[kp_a][kp_b] = 0;
                    if (i < m && j < n) {
                    float acc = b ? b[j] : 0.0f;
                    kp_acc[kp_a][kp_b] = acc;
                    }
                  }
                }
                const long long kp_kend = (long long)(k);
                // Every slice of this tile inside the problem: its loads need no bounds test.
                const bool kp_whole = kp_m0 + 128 <= (long long)(m) && kp_n0 + 128 <= (long long)(n) && kp_kend % 8 == 0;
                {
                  const float* kp_A0 = [&]() -> const float* { const int i = (int)(kp_m0 + 0); const int p = (int)(0);  return &(x[i * k + p]); }();
                  const float* kp_A1 = [&]() -> const float* { const int i = (int)(kp_m0 + 1); const int p = (int)(0);  return &(x[i * k + p]); }();
                  const bool kp_vA = (long long)(k) % 4 == 0 && ((unsigned long long)kp_A0 & 15) == 0 && (kp_A1 - kp_A0) % 4 == 0;
                  const float* kp_B0 = [&]() -> const float* { const int j = (int)(kp_n0 + 0); const int p = (int)(0);  return &(w[j * k + p]); }();
                  const float* kp_B1 = [&]() -> const float* { const int j = (int)(kp_n0 + 1); const int p = (int)(0);  return &(w[j * k + p]); }();
                  const bool kp_vB = (long long)(k) % 4 == 0 && ((unsigned long long)kp_B0 & 15) == 0 && (kp_B1 - kp_B0) % 4 == 0;
                  int kp_s = 0;
                if (kp_vA && kp_vB && kp_whole) {
                float kp_rA[4], kp_rB[4];
                if (kp_kend > 0) {
                  const long long kp_kn = 0;
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      const int i = (int)(kp_m0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      const float4 kp_v = *reinterpret_cast<const float4*>(&(x[i * k + p]));
                      kp_rA[4 * kp_q] = kp_v.x; kp_rA[4 * kp_q + 1] = kp_v.y; kp_rA[4 * kp_q + 2] = kp_v.z; kp_rA[4 * kp_q + 3] = kp_v.w;
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      const int j = (int)(kp_n0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      const float4 kp_v = *reinterpret_cast<const float4*>(&(w[j * k + p]));
                      kp_rB[4 * kp_q] = kp_v.x; kp_rB[4 * kp_q + 1] = kp_v.y; kp_rB[4 * kp_q + 2] = kp_v.z; kp_rB[4 * kp_q + 3] = kp_v.w;
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      #pragma unroll
                      for (int kp_c = 0; kp_c < 4; ++kp_c) kp_As[0][kp_kk + kp_c][kp_xx] = kp_rA[4 * kp_q + kp_c];
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      #pragma unroll
                      for (int kp_c = 0; kp_c < 4; ++kp_c) kp_Bs[0][kp_kk + kp_c][kp_xx] = kp_rB[4 * kp_q + kp_c];
                    }
                }
                  asm volatile("bar.sync 1, 256;" ::: "memory");
                for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += 8) {
                  const bool kp_more = kp_k0 + 8 < kp_kend;
                  // The next slice's global loads are in flight while this one is multiplied.
                  if (kp_more) {
                  const long long kp_kn = kp_k0 + 8;
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      const int i = (int)(kp_m0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      const float4 kp_v = *reinterpret_cast<const float4*>(&(x[i * k + p]));
                      kp_rA[4 * kp_q] = kp_v.x; kp_rA[4 * kp_q + 1] = kp_v.y; kp_rA[4 * kp_q + 2] = kp_v.z; kp_rA[4 * kp_q + 3] = kp_v.w;
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      const int j = (int)(kp_n0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      const float4 kp_v = *reinterpret_cast<const float4*>(&(w[j * k + p]));
                      kp_rB[4 * kp_q] = kp_v.x; kp_rB[4 * kp_q + 1] = kp_v.y; kp_rB[4 * kp_q + 2] = kp_v.z; kp_rB[4 * kp_q + 3] = kp_v.w;
                    }
                  }
                  #pragma unroll
                  for (int kp_kk = 0; kp_kk < 8; ++kp_kk) {
                    float kp_x[8], kp_y[8];
                    const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 0]);
                    kp_x[0] = kp_x0.x;
                    kp_x[1] = kp_x0.y;
                    kp_x[2] = kp_x0.z;
                    kp_x[3] = kp_x0.w;
                    const float4 kp_x1 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 64]);
                    kp_x[4] = kp_x1.x;
                    kp_x[5] = kp_x1.y;
                    kp_x[6] = kp_x1.z;
                    kp_x[7] = kp_x1.w;
                    const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 0]);
                    kp_y[0] = kp_y0.x;
                    kp_y[1] = kp_y0.y;
                    kp_y[2] = kp_y0.z;
                    kp_y[3] = kp_y0.w;
                    const float4 kp_y1 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 64]);
                    kp_y[4] = kp_y1.x;
                    kp_y[5] = kp_y1.y;
                    kp_y[6] = kp_y1.z;
                    kp_y[7] = kp_y1.w;
                    #pragma unroll
                    for (int kp_a = 0; kp_a < 8; ++kp_a)
                      #pragma unroll
                      for (int kp_b = 0; kp_b < 8; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
                  }
                  // The other buffer was last read before the previous barrier.
                  if (kp_more) {
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      #pragma unroll
                      for (int kp_c = 0; kp_c < 4; ++kp_c) kp_As[kp_s ^ 1][kp_kk + kp_c][kp_xx] = kp_rA[4 * kp_q + kp_c];
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 1; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 2 * 4, kp_xx = kp_e / 2;
                      #pragma unroll
                      for (int kp_c = 0; kp_c < 4; ++kp_c) kp_Bs[kp_s ^ 1][kp_kk + kp_c][kp_xx] = kp_rB[4 * kp_q + kp_c];
                    }
                  }
                  asm volatile("bar.sync 1, 256;" ::: "memory");
                  kp_s ^= 1;
                }
                } else {
                for (long long kp_k0 = 0; kp_k0 < kp_kend; kp_k0 += 8) {
                  const long long kp_kn = kp_k0;
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 4; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 8, kp_xx = kp_e / 8;
                      const int i = (int)(kp_m0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      kp_As[0][kp_kk][kp_xx] = (i < m && p < k) ? (float)(x[i * k + p]) : (float)0;
                    }
                    #pragma unroll
                    for (int kp_q = 0; kp_q < 4; ++kp_q) {
                      const int kp_e = kp_tid + 256 * kp_q;
                      const int kp_kk = kp_e % 8, kp_xx = kp_e / 8;
                      const int j = (int)(kp_n0 + kp_xx);
                      const int p = (int)(kp_kn + kp_kk);
                      kp_Bs[0][kp_kk][kp_xx] = (j < n && p < k) ? (float)(w[j * k + p]) : (float)0;
                    }
                  asm volatile("bar.sync 1, 256;" ::: "memory");
                  #pragma unroll
                  for (int kp_kk = 0; kp_kk < 8; ++kp_kk) {
                    float kp_x[8], kp_y[8];
                    const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 0]);
                    kp_x[0] = kp_x0.x;
                    kp_x[1] = kp_x0.y;
                    kp_x[2] = kp_x0.z;
                    kp_x[3] = kp_x0.w;
                    const float4 kp_x1 = *reinterpret_cast<const float4*>(&kp_As[kp_s][kp_kk][4 * kp_tr + 64]);
                    kp_x[4] = kp_x1.x;
                    kp_x[5] = kp_x1.y;
                    kp_x[6] = kp_x1.z;
                    kp_x[7] = kp_x1.w;
                    const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 0]);
                    kp_y[0] = kp_y0.x;
                    kp_y[1] = kp_y0.y;
                    kp_y[2] = kp_y0.z;
                    kp_y[3] = kp_y0.w;
                    const float4 kp_y1 = *reinterpret_cast<const float4*>(&kp_Bs[kp_s][kp_kk][4 * kp_tc + 64]);
                    kp_y[4] = kp_y1.x;
                    kp_y[5] = kp_y1.y;
                    kp_y[6] = kp_y1.z;
                    kp_y[7] = kp_y1.w;
                    #pragma unroll
                    for (int kp_a = 0; kp_a < 8; ++kp_a)
                      #pragma unroll
                      for (int kp_b = 0; kp_b < 8; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
                  }
                  asm volatile("bar.sync 1, 256;" ::: "memory");
                }
                }
                }
                // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
                #pragma unroll
                for (int kp_a = 0; kp_a < 8; ++kp_a) {
                  #pragma unroll
                  for (int kp_b = 0; kp_b < 8; ++kp_b) {
                    const int i = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
                    const int j = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
                    if (!(i < m && j < n)) continue;
                    float acc = b ? b[j] : 0.0f;
                    acc = kp_acc[kp_a][kp_b];
                    y[i * n + j] = acc;
                  }
                }
              }
            }
        "###]],
    );
    check(
        "sum_atomic.cu",
        "sum_squares",
        "BlockReduce",
        expect![[r#"
            ## hierarchical reduction into &total[0]: register sum, warp shuffles, one atomicAdd per block
            ## hierarchical reduction into &total[0]: register sum, warp shuffles, one atomicAdd per block; launch block = 512, grid = min(ceil_div(N, 512), 132 * 2)
            ## hierarchical reduction into &total[0]: register sum, warp shuffles, one atomicAdd per block; launch block = 256, grid = min(ceil_div(N, 256), 132 * 4)
            ## hierarchical reduction into &total[0]: register sum, warp shuffles, one atomicAdd per block; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 1)
            ## hierarchical reduction into &total[0]: register sum of four units a step through 128-bit loads, warp shuffles, one atomicAdd per block
            ## hierarchical reduction into &total[0]: register sum of four units a step through 128-bit loads, warp shuffles, one atomicAdd per block; launch block = 512, grid = min(ceil_div(N, 512), 132 * 2)
            ## hierarchical reduction into &total[0]: register sum of four units a step through 128-bit loads, warp shuffles, one atomicAdd per block; launch block = 256, grid = min(ceil_div(N, 256), 132 * 4)
            ## hierarchical reduction into &total[0]: register sum of four units a step through 128-bit loads, warp shuffles, one atomicAdd per block; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 1)
            __global__ void sum_squares(float* total, const float* x, long long n) {
              // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
              float kp_acc = 0;
              for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
                const unsigned long long i = (unsigned long long)(kp_u);
                float v = x[i];
                kp_acc += v * v;
              }
              __shared__ float kp_part[32];
              const unsigned kp_tid = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
              for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);
              if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;
              __syncthreads();
              if (kp_tid < 32u) {
                float kp_v = kp_tid < (blockDim.x * blockDim.y * blockDim.z) / 32u ? kp_part[kp_tid] : (float)0;
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
                if (kp_tid == 0) atomicAdd(&total[0], kp_v);
              }
            }
        "#]],
    );
}

#[test]
fn snapshots_of_model_recognised_units() {
    // The interleaved tree's root gets the block's sum; the user's last statement is kept.
    check(
        "naive/block_reduce/reduce_interleaved_mod.cu",
        "reduce0",
        "ShuffleTree",
        expect![[r#"
        ## the interleaved tree over sdata as warp shuffles and one shared slot per warp
        __global__ void reduce0(float* partial, const float* x, int n) {
          extern __shared__ float sdata[];
          unsigned int tid = threadIdx.x;
          unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
          // Warp shuffles, one shared slot per warp, the first warp finishes (kernelpro ShuffleTree).
          float kp_v = (i < n) ? x[i] : 0.0f;
          for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
          __shared__ float kp_warp[32];
          if ((threadIdx.x & 31u) == 0) kp_warp[threadIdx.x >> 5] = kp_v;
          __syncthreads();
          if (threadIdx.x < 32u) {
            kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : (float)0;
            for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
            if (threadIdx.x == 0) sdata[0] = kp_v;
          }
          __syncthreads();
          if (tid == 0) partial[blockIdx.x] = sdata[0];
        }
    "#]],
    );
    // The same kind of tree whose root is the block's output: a warp per segment, the user's index
    // re-declared per element and the last statement run by lane 0 (a template, a long index).
    check(
        "naive/block_reduce/reduce_bitmask_template.cu",
        "block_reduce",
        "SegmentWarps",
        expect![[r#"
            ## each block's sum into buf by one warp (lanes split the block's elements, shuffles add), 4224 blocks at most walking every original block; the launch as it was
            ## each block's sum into buf by one warp (lanes split the block's elements, shuffles add), 1056 blocks at most walking every original block; the launch as it was
            ## each block's sum into buf by one warp (lanes split the block's elements, shuffles add), 264 blocks at most walking every original block; the launch as it was
            __global__ void block_reduce(T* partial, const T* x, long n) {
              // Each warp sums whole original blocks' segments: lanes split the segment, shuffles add (kernelpro SegmentWarps).
              const unsigned kp_blocks = gridDim.x < 4224u ? gridDim.x : 4224u;
              if (blockIdx.x >= kp_blocks) return;
              const unsigned kp_lane = threadIdx.x & 31u;
              for (long long kp_seg = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); kp_seg < (long long)gridDim.x; kp_seg += (long long)kp_blocks * (blockDim.x >> 5)) {
                T kp_v = (T)0;
                #pragma unroll 8
                for (unsigned kp_t = kp_lane; kp_t < blockDim.x; kp_t += 32u) {
                  long g = (long)((unsigned)kp_seg) * THREADS + kp_t;
                  kp_v += (T)(g < n ? x[g] : T(0));
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
                if (kp_lane == 0) partial[((unsigned)kp_seg)] = kp_v;
              }
            }
        "#]],
    );
    // Each element's thread recomputed its row's max and sum in `__device__` helpers: inlined, once
    // per row, then a warp per row with max and sum all-reductions.
    check(
        "naive/softmax/softmax_devfn_elem2d.cu",
        "softmax_per_element",
        "HoistRowWork",
        expect![[r#"
            ## the row's work once per row (helpers inlined), then one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions
            ## the row's work once per row (helpers inlined), then one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
            ## the row's work once per row (helpers inlined), then one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
            ## the row's work once per row (helpers inlined), then one warp per unit (row): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
            ## the row's work once per row (helpers inlined), then one block per unit (row): 3 loop(s) split across the block's threads, shuffle and shared-memory all-reductions
            ## the row's work once per row (helpers inlined), then one block per unit (row): 3 loop(s) split across the block's threads, shuffle and shared-memory all-reductions; launch block = 512, grid = min(ceil_div(ROWS, 1), 132 * 4)
            ## the row's work once per row (helpers inlined), then one block per unit (row): 3 loop(s) split across the block's threads, shuffle and shared-memory all-reductions; launch block = 1024, grid = min(ceil_div(ROWS, 1), 132 * 2)
            __global__ void softmax_per_element(const float* X, float* Y, int M, int N) {
              // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
              const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
              const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
              for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(M); kp_u += kp_warps) {
                const int row = (int)(kp_u);
                const float* kp_mx_X = (X);
                int kp_mx_row = (row);
                int kp_mx_width = (N);
                float kp_mx_maxval = -INFINITY;
                for (int kp_mx_i = 0 + kp_lane; kp_mx_i < kp_mx_width; kp_mx_i += 32) kp_mx_maxval = fmaxf(kp_mx_maxval, kp_mx_X[kp_mx_row * kp_mx_width + kp_mx_i]);
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_mx_maxval = fmaxf(kp_mx_maxval, __shfl_xor_sync(0xffffffffu, kp_mx_maxval, kp_o));
                float mx = kp_mx_maxval;
                const float* kp_s_X = (X);
                int kp_s_row = (row);
                int kp_s_width = (N);
                float kp_s_mx = (mx);
                float kp_s_s = 0.f;
                if (kp_lane != 0) kp_s_s = 0;
                for (int kp_s_i = 0 + kp_lane; kp_s_i < kp_s_width; kp_s_i += 32) kp_s_s += expf(kp_s_X[kp_s_row * kp_s_width + kp_s_i] - kp_s_mx);
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_s_s += __shfl_xor_sync(0xffffffffu, kp_s_s, kp_o);
                float s = kp_s_s;
                for (int col = 0 + kp_lane; col < N; col += 32) {
                  Y[row * N + col] = expf(X[row * N + col] - mx) / s;
                }
                __syncwarp();
              }
            }
        "#]],
    );
    // The bin chosen through pointer arithmetic (`hist + bin`) goes to a per-block copy.
    check(
        "naive/histogram/hist_int_shift.cu",
        "histo_shift",
        "PrivateHistogram",
        expect![[r#"
        ## 256 bins of hist privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block
        ## 256 bins of hist privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 512, grid = min(ceil_div(N, 512), 132 * 2)
        ## 256 bins of hist privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 256, grid = min(ceil_div(N, 256), 132 * 4)
        ## 256 bins of hist privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 1)
        __global__ void histo_shift(int* hist, const int* vals, int count) {
          // 256 bins of hist per block in shared memory, one atomic per bin per block (kernelpro).
          __shared__ int kp_bins[256];
          for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) kp_bins[kp_j] = 0;
          __syncthreads();
          for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(count); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
            const int tid = (int)(kp_u);
            int bin = vals[tid] >> 2;
            { const long long kp_b = (long long)(bin); if (kp_b >= 0 && kp_b < 256) atomicAdd(&kp_bins[kp_b], 1); else atomicAdd(&hist[kp_b], 1); }
          }
          __syncthreads();
          for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) {
            const int kp_c = kp_bins[kp_j];
            if (kp_c != 0) atomicAdd(&hist[kp_j], kp_c);
          }
        }
    "#]],
    );
    // Reads of x at i + j - r go through the tile; the guard on them stays the user's.
    check(
        "naive/stencil/conv1d_v1.cu",
        "conv1d_v1",
        "StencilTile",
        expect![[r#"
        ## 1D stencil over (i) reading x through a shared tile with a halo of 32
        ## 1D stencil over (i) reading x through a shared tile with a halo of 32; launch block = 256, grid = min(ceil_div(N, 256), 132 * 8)
        ## 1D stencil over (i) reading x through a shared tile with a halo of 32; launch block = 512, grid = min(ceil_div(N, 512), 132 * 4)
        ## 1D stencil over (i) reading x through a shared tile with a halo of 32; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 2)
        __global__ void conv1d_v1(float* y, const float* x, const float* w, int n, int k) {
          // A shared tile of each block step's inputs and a halo of 32 either side (kernelpro StencilTile).
          __shared__ float kp_tile[1024 + 2 * 32];
          const long long kp_n = (long long)(n);
          const long long kp_threads = (blockDim.x * blockDim.y * blockDim.z);
          for (long long kp_base = (long long)blockIdx.x * kp_threads; kp_base < kp_n; kp_base += (long long)gridDim.x * kp_threads) {
            const long long kp_lo = kp_base - 32 < 0 ? 0 : kp_base - 32;
            const long long kp_hi = kp_base + kp_threads + 32 > (long long)(n) ? (long long)(n) : kp_base + kp_threads + 32;
            __syncthreads();
            for (long long kp_q = kp_lo + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_q < kp_hi; kp_q += kp_threads) kp_tile[kp_q - kp_lo] = x[kp_q];
            __syncthreads();
            auto kp_x = [&](long long kp_q) -> float { return kp_q >= kp_lo && kp_q < kp_hi ? kp_tile[kp_q - kp_lo] : x[kp_q]; };
            for (long long kp_u = kp_base + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_u < kp_n && kp_u < kp_base + kp_threads; kp_u += kp_threads) {
              const int i = (int)(kp_u);
              int r = k / 2;
              float acc = 0.0f;
              for (int j = 0; j < k; j++) {
                int p = i + j - r;
                if (p >= 0 && p < n) acc += kp_x(p) * w[j]; // expect: MissedReuse
              }
              y[i] = acc;
            }
          }
        }
    "#]],
    );
    // `i = blockIdx.y * (nrow / 2) + <global x>` with the guard on the global x alone: a synthetic unit index.
    // A maximum's walk and the walk summing exp(e - max) become one online pass, one paired shuffle.
    check(
        "naive/softmax/softmax_attn2d_long.cu",
        "attn_softmax",
        "WarpUnits",
        expect![[r#"
        ## one warp per unit (q): 3 loop(s) split across lanes, shuffle all-reductions, online max and sum in one pass
        ## one warp per unit (q): 3 loop(s) split across lanes, shuffle all-reductions, online max and sum in one pass; launch block = 256, grid = (min(ceil_div(SEQ, 8), 132 * 16), BH)
        ## one warp per unit (q): 3 loop(s) split across lanes, shuffle all-reductions, online max and sum in one pass; launch block = 128, grid = (min(ceil_div(SEQ, 4), 132 * 32), BH)
        ## one warp per unit (q): 3 loop(s) split across lanes, shuffle all-reductions, online max and sum in one pass; launch block = 512, grid = (min(ceil_div(SEQ, 16), 132 * 8), BH)
        __global__ void attn_softmax(float* att, const float* pre, int T) {
          // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
          const long h = (long)blockIdx.y;
          const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
          const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
          for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(T); kp_u += kp_warps) {
            const int q = (int)(kp_u);
            long off = (h * T + q) * T;
            float mx = -1e30f;
            float denom = 0.f;
            if (kp_lane != 0) denom = 0;
            for (int k = 0 + kp_lane; k < T; k += 32) {
              const auto kp_m0 = mx;
              mx = fmaxf(mx, pre[off + k]);
              if (mx != kp_m0 && denom != 0) denom *= __expf(kp_m0 - mx);
              denom += __expf(pre[off + k] - mx);
            }
            for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_om = __shfl_xor_sync(0xffffffffu, mx, kp_o); const auto kp_os = __shfl_xor_sync(0xffffffffu, denom, kp_o); const auto kp_nm = fmaxf(mx, kp_om); denom = (denom != 0 ? denom * __expf(mx - kp_nm) : denom) + (kp_os != 0 ? kp_os * __expf(kp_om - kp_nm) : kp_os); mx = kp_nm; }
            for (int k = 0 + kp_lane; k < T; k += 32) att[off + k] = __expf(pre[off + k] - mx) / denom;
            __syncwarp();
          }
        }
    "#]],
    );
    check(
        "naive/argmax/argmax_template_macro.cu",
        "argmax_kernel",
        "WarpUnits",
        expect![[r#"
            ## one warp per unit (kp_gx): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = (min(ceil_div(ROWS / 2, 8), 132 * 16), 2)
            ## one warp per unit (kp_gx): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = (min(ceil_div(ROWS / 2, 4), 132 * 32), 2)
            ## one warp per unit (kp_gx): 1 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = (min(ceil_div(ROWS / 2, 16), 132 * 8), 2)
            ## one warp per unit (kp_gx): 1 loop(s) split across lanes, shuffle all-reductions
            __global__ void argmax_kernel(int* out, const T* vals, int nrow, int ncol) {
              // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
              const long long kp_by = (long long)blockIdx.y;
              const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
              const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
              for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(nrow / 2); kp_u += kp_warps) {
                const long long kp_gx = (long long)(kp_u);
                int i = (kp_by * (nrow / 2)) + kp_gx;
                T m = ELEM(i, 0);
                int a = 0;
                for (int j = 1 + kp_lane; j < ncol; j += 32) {
                  T v = ELEM(i, j); // expect: UncoalescedAccess|RowWalk
                  if (v > m) { m = v; a = j; }
                }
                for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, m, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, a, kp_o); if (kp_t > m || (kp_t == m && kp_j < a)) { m = kp_t; a = kp_j; } }
                if (kp_lane == 0) {
                  out[i] = a;
                }
                __syncwarp();
              }
            }
        "#]],
    );
}

/// Which structural rewrites apply to every kernel of the `.cu` files under
/// `KP_PROBE_DIR` (a corpus not in the repo: public kernels, another branch's tasks).
#[test]
#[ignore = "a probe over a directory named by KP_PROBE_DIR"]
fn probe_dir() {
    let dir = PathBuf::from(std::env::var("KP_PROBE_DIR").expect("KP_PROBE_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "cu") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for k in kernelpro_source::parse(&text).kernels() {
            let got: Vec<String> = STRUCTURAL
                .iter()
                .filter_map(|name| {
                    let n = recipe(name).rewrite(&text, &k.name).len();
                    (n > 0).then(|| format!("{name} x{n}"))
                })
                .collect();
            println!("{} {}: {}", f.display(), k.name, if got.is_empty() { "-".to_string() } else { got.join(", ") });
            if std::env::var_os("KP_PROBE_COMPILE").is_some() {
                for name in STRUCTURAL {
                    for rw in distinct_code(&recipe(name).rewrite(&text, &k.name)) {
                        println!(
                            "  {name} ({}): {}",
                            rw.note,
                            compile_errors(&rw.source).as_deref().unwrap_or("compiles")
                        );
                    }
                }
            }
        }
    }
}

/// Prints one recipe's rewrites of one kernel: `KP_SHOW=naive/sum/sum_atomic_1d.cu:sum_atomic:BlockReduce`.
#[test]
#[ignore = "prints the rewrites named by KP_SHOW"]
fn show() {
    let f = std::env::var("KP_SHOW").unwrap();
    let (file, rest) = f.split_once(':').unwrap();
    let (kernel, name) = rest.split_once(':').unwrap();
    // KP_SHOW_INDEX=N: the Nth rewrite's whole source (for nvcc -Xptxas -v), not the first's body.
    match std::env::var("KP_SHOW_INDEX").ok().and_then(|i| i.parse::<usize>().ok()) {
        Some(i) => println!("{}", recipe(name).rewrite(&fixture(file), kernel)[i].source),
        None => println!("{}", generated(file, kernel, name)),
    }
}

/// A batch on blockIdx.z stays the launch's z; the tiles walk the x and y blocks, so a launch
/// variant sets y to 1 and keeps z.
#[test]
fn batched_contraction_keeps_the_batch_on_z() {
    let text = fixture("bmm_batch_z.cu");
    let rewrites = recipe("TiledContraction").rewrite(&text, "bmm");
    let grids: Vec<&str> =
        rewrites.iter().map(|rw| rw.source.lines().find(|l| l.starts_with("// kernelpro: grid")).unwrap()).collect();
    expect![[r#"
        [
            "// kernelpro: grid = (ceil_div(N, 16), ceil_div(M, 16), B)",
            "// kernelpro: grid = (ceil_div(N, 16), ceil_div(M, 16), B)",
            "// kernelpro: grid = (ceil_div(N, 16), ceil_div(M, 16), B)",
            "// kernelpro: grid = (ceil_div(N, 16), ceil_div(M, 16), B)",
            "// kernelpro: grid = (ceil_div(N, 16), ceil_div(M, 16), B)",
            "// kernelpro: grid = (ceil_div((M) * (N), 16384), 1, B)",
            "// kernelpro: grid = (ceil_div((M) * (N), 16384), 1, B)",
            "// kernelpro: grid = (ceil_div((M) * (N), 4096), 1, B)",
            "// kernelpro: grid = (ceil_div((M) * (N), 8192), 1, B)",
            "// kernelpro: grid = (ceil_div((M) * (N), 8192), 1, B)",
        ]
    "#]]
    .assert_debug_eq(&grids);
    assert!(rewrites[0].source.contains("const int b = (int)blockIdx.z;"));
    assert!(rewrites[0].source.contains("kp_t = ((long long)blockIdx.x + (long long)gridDim.x * blockIdx.y)"));
}

/// Style fixtures (`fixtures/structural/styles/`): the same kernel in another author's style, against
/// its plain form: (style fixture, plain fixture, kernel, the rewrites where they differ from the
/// plain form's, else empty). Each style must read as the plain one: the same model facts and the
/// same structural rewrites, every candidate compiling for sm_90.
const STYLES: &[(&str, &str, &str, &str)] = &[
    ("styles/rowmean_brace_template.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_paren_init.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_auto_constexpr.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_index_unsigned.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_index_int64_t.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_index_long_long.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_index_uint32_t.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_index_unsigned_long.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_pointer_while.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_pointer_for.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_define_short.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_specialised.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/rowmean_device_index.cu", "styles/rowmean_plain.cu", "row_mean", ""),
    ("styles/gelu_short_macros.cu", "styles/gelu_plain.cu", "gelu", ""),
    ("styles/gelu_device_helper.cu", "styles/gelu_plain.cu", "gelu", ""),
    // A template's element type is not known to be `float`: no float4 variant (a primary template's
    // float4 loads would be wrong for its other instantiations).
    ("styles/gelu_specialised_half.cu", "styles/gelu_plain.cu", "gelu", "GridStrideMap x4"),
    ("styles/sum_brace_unsigned.cu", "styles/sum_plain.cu", "sum", ""),
    ("styles/sum_auto_int64.cu", "styles/sum_plain.cu", "sum", ""),
    ("styles/transpose_grid_width_const_int.cu", "styles/transpose_grid_width_plain.cu", "transpose_grid_width", ""),
];

/// The model's facts that decide a rewrite, without names or spellings: the pattern, each loop's
/// bound and step, each access's space, kind, base and index (loop counters named by their loop).
pub(super) fn model_facts(file: &str, kernel: &str) -> String {
    use kernelpro_source::kernel_model::{Atom, Poly, Step};
    let text = fixture(file);
    let source = kernelpro_source::parse(&text);
    let Some(m) = kernelpro_source::kernel_model::model_kernel(&text, &source, kernel, None) else {
        return "no model".into();
    };
    let rename = |p: &Poly| {
        p.substitute(|a| {
            m.loops.iter().position(|l| l.atom.as_ref() == Some(a)).map(|i| Poly::atom(Atom::Sym(format!("loop{i}"))))
        })
        .to_string()
    };
    let mut out = vec![format!("pattern {:?}", m.pattern().map(|p| p.pattern.name()))];
    for (i, l) in m.loops.iter().enumerate() {
        let step = match &l.step {
            Step::Add(s) => rename(s),
            _ => "?".into(),
        };
        out.push(format!("loop{i} bound {:?} step {step}", l.bound.as_ref().map(rename)));
    }
    for a in &m.accesses {
        out.push(format!("{:?} {:?} {}[{}]", a.space, a.kind, a.base, rename(&a.index)));
    }
    out.join("\n")
}

#[test]
fn every_style_reads_as_the_plain_form() {
    let mut wrong = Vec::new();
    for (style, plain, kernel, differs) in STYLES {
        let (got, want) = (applied(style, kernel), applied(plain, kernel));
        let want = if differs.is_empty() { want } else { differs.to_string() };
        if got != want {
            wrong.push(format!("{style}: rewrites `{got}`, the plain form `{want}`"));
        }
        let (got, want) = (model_facts(style, kernel), model_facts(plain, kernel));
        if got != want {
            wrong.push(format!("{style}: model facts\n{got}\nthe plain form's\n{want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn every_style_rewrite_compiles_for_sm_90() {
    let mut failed = Vec::new();
    for (file, _, kernel, _) in STYLES {
        let text = fixture(file);
        for name in STRUCTURAL {
            for rw in distinct_code(&recipe(name).rewrite(&text, kernel)) {
                if let Some(e) = compile_errors(&rw.source) {
                    failed.push(format!("{name} on {file} ({}):\n{e}\n{}", rw.note, rw.source));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The rewrites of kernels read through a view (a Welford recurrence as two passes, a
/// block-partitioned walk as a grid-stride loop, a loop over a tile's rows as a thread per element),
/// and the 2D stencil tile.
#[test]
fn view_snapshots() {
    check(
        "boxblur_2d_window.cu",
        "box_blur",
        "StencilTile",
        expect![[r#"
            ## 2D stencil over (row, col) reading img through 32x32 shared tiles with a halo of 4
            ## 2D stencil over (row, col) reading img through 32x32 shared tiles with a halo of 4; launch block = 256, grid = ceil_div((H) * (W), 1024)
            __global__ void box_blur(float* out, const float* img, int h, int w) {
              // 32x32 output tiles; the input through a shared tile with a halo of 4 on every side (kernelpro StencilTile).
              __shared__ float kp_tile[40][40 + 1];
              const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
              const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
              const long long kp_tiles_c = ((long long)(w) + 31) / 32;
              const long long kp_tiles = ((long long)(h) + 31) / 32 * kp_tiles_c;
              for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
                const long long kp_r0 = kp_t / kp_tiles_c * 32 - 4, kp_c0 = kp_t % kp_tiles_c * 32 - 4;
                __syncthreads();
                for (int kp_e = kp_tid; kp_e < 40 * 40; kp_e += kp_threads) {
                  const long long kp_r = kp_r0 + kp_e / 40, kp_c = kp_c0 + kp_e % 40;
                  if (kp_r >= 0 && kp_r < (long long)(h) && kp_c >= 0 && kp_c < (long long)(w)) kp_tile[kp_e / 40][kp_e % 40] = img[kp_r * (long long)(w) + kp_c];
                }
                __syncthreads();
                auto kp_x = [&](long long kp_r, long long kp_c) -> float {
                  const long long kp_i = kp_r - kp_r0, kp_j = kp_c - kp_c0;
                  const bool kp_in = kp_r >= 0 && kp_r < (long long)(h) && kp_c >= 0 && kp_c < (long long)(w);
                  return kp_in && kp_i >= 0 && kp_i < 40 && kp_j >= 0 && kp_j < 40 ? kp_tile[kp_i][kp_j] : img[kp_r * (long long)(w) + kp_c];
                };
                for (int kp_e = kp_tid; kp_e < 32 * 32; kp_e += kp_threads) {
                  const long long kp_ur = kp_r0 + 4 + kp_e / 32, kp_uc = kp_c0 + 4 + kp_e % 32;
                  if (kp_ur >= (long long)(h) || kp_uc >= (long long)(w)) continue;
                  {
                    const int row = (int)(kp_ur);
                    const int col = (int)(kp_uc);
                    float sum = 0.0f;
                    int count = 0;
                    for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
                      for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
                        int r = row + dy, q = col + dx;
                        if (r >= 0 && r < h && q >= 0 && q < w) {
                          sum += kp_x(r, q);
                          ++count;
                        }
                      }
                    }
                    out[row * w + col] = sum / count;
                  }
                }
              }
            }
        "#]],
    );
    check(
        "layernorm_welford_row.cu",
        "layernorm_welford",
        "WarpUnits",
        expect![[r#"
        ## one warp per unit (r): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 256, grid = min(ceil_div(ROWS, 8), 132 * 16)
        ## one warp per unit (r): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 128, grid = min(ceil_div(ROWS, 4), 132 * 32)
        ## one warp per unit (r): 3 loop(s) split across lanes, shuffle all-reductions; launch block = 512, grid = min(ceil_div(ROWS, 16), 132 * 8)
        ## one warp per unit (r): 3 loop(s) split across lanes, shuffle all-reductions
        __global__ void layernorm_welford(float* y, const float* x, const float* gamma, const float* beta, int rows,
                                          int cols, float eps) {
                                            // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
                                            const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
                                            const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
                                            for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(rows); kp_u += kp_warps) {
                                              const int r = (int)(kp_u);
                                              float mean = 0.0f, m2 = 0.0f;
                                              if (kp_lane != 0) mean = 0;
                                              for (int j = 0 + kp_lane; j < cols; j += 32) { float v = x[r * cols + j]; mean += v; }
                                              for (int kp_o = 16; kp_o > 0; kp_o >>= 1) mean += __shfl_xor_sync(0xffffffffu, mean, kp_o);
                                              mean /= cols;
                                              if (kp_lane != 0) m2 = 0;
                                              for (int j = 0 + kp_lane; j < cols; j += 32) { float v = x[r * cols + j]; float d = v - mean; m2 += d * d; }
                                              for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m2 += __shfl_xor_sync(0xffffffffu, m2, kp_o);
                                              float rstd = rsqrtf(m2 / cols + eps);
                                              for (int j = 0 + kp_lane; j < cols; j += 32) {
                                                y[r * cols + j] = (x[r * cols + j] - mean) * rstd * gamma[j] + beta[j];
                                              }
                                              __syncwarp();
                                            }
                                          }
    "#]],
    );
    check(
        "hist_block_partitioned.cu",
        "histo_sectioned",
        "PrivateHistogram",
        expect![[r#"
        ## 7 bins of histo privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block
        ## 7 bins of histo privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 512, grid = min(ceil_div(N, 512), 132 * 2)
        ## 7 bins of histo privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 256, grid = min(ceil_div(N, 256), 132 * 4)
        ## 7 bins of histo privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block; launch block = 1024, grid = min(ceil_div(N, 1024), 132 * 1)
        __global__ void histo_sectioned(const unsigned char* data, unsigned int length, unsigned int* histo) {
          // 7 bins of histo per block in shared memory, one atomic per bin per block (kernelpro).
          __shared__ unsigned int kp_bins[7];
          for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 7; kp_j += (blockDim.x * blockDim.y * blockDim.z)) kp_bins[kp_j] = 0;
          __syncthreads();
          for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(length); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
            const unsigned int i = (unsigned int)(kp_u);
            int pos = data[i] - 'a';
            if (pos >= 0 && pos < 26) { const long long kp_b = (long long)(pos / 4); if (kp_b >= 0 && kp_b < 7) atomicAdd(&kp_bins[kp_b], 1u); else atomicAdd(&histo[kp_b], 1u); }
          }
          __syncthreads();
          for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 7; kp_j += (blockDim.x * blockDim.y * blockDim.z)) {
            const unsigned int kp_c = kp_bins[kp_j];
            if (kp_c != 0) atomicAdd(&histo[kp_j], kp_c);
          }
        }
    "#]],
    );
    check(
        "transpose_tile_rows_loop.cu",
        "transpose_rows_loop",
        "TiledTranspose",
        expect![[r#"
        ## 32x33 shared tiles: loads along x, stores along y
        ## 32x33 shared tiles: loads along x, stores along y; launch block = 256, grid = ceil_div((W) * (H), 1024)
        __global__ void transpose_rows_loop(float* dst, const float* src, int width, int height) {
          // 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
          __shared__ float kp_tile[32][33];
          const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
          const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
          const long long kp_tiles_j = ((long long)(height) + 31) / 32;
          const long long kp_tiles = ((long long)(width) + 31) / 32 * kp_tiles_j;
          for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {
            const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
            for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
              const int kp_r = kp_e % 32, kp_c = kp_e / 32;
              const int x = (int)(kp_i0 + kp_r);
              const int y = (int)(kp_j0 + kp_c);
              if (x < width && y < height) kp_tile[kp_r][kp_c] = src[(y) * width + x];
            }
            __syncthreads();
            for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {
              const int kp_r = kp_e / 32, kp_c = kp_e % 32;
              const int x = (int)(kp_i0 + kp_r);
              const int y = (int)(kp_j0 + kp_c);
              if (x < width && y < height) {
                dst[x * height + (y)] = kp_tile[kp_r][kp_c];
              }
            }
            __syncthreads();
          }
        }
    "#]],
    );
}

/// The sums and maps of KernelBench's losses and pooling: a mean's divisor divides each thread's
/// sum once, aligned float reads go four a step, and the unit index's divisions by sizes the
/// same for every unit are counters the loop's step keeps (dozens of 64-bit instructions a unit
/// before); an integer sum keeps its divisions.
#[test]
fn means_divide_once_read_four_a_step_and_count_their_index_divisions() {
    let all = |file: &str, kernel: &str, name: &str| -> Vec<String> {
        recipe(name).rewrite(&fixture(file), kernel).into_iter().map(|r| r.source).collect()
    };
    let mse = all("kbench/94_MSELoss.cu", "mse_loss", "BlockReduce");
    assert!(mse.iter().all(|s| s.contains("kp_acc += (double)(d * d);") && s.contains("kp_acc = kp_acc / (n);")));
    let vec4: Vec<&String> = mse.iter().filter(|s| s.contains("reinterpret_cast<const float4*>(p) + kp_v")).collect();
    assert_eq!(vec4.len(), 4, "one four-a-step form, at four launches");
    assert!(vec4[0].contains("(((unsigned long long)(p) | (unsigned long long)(t)) % 16 == 0)"), "{}", vec4[0]);
    let hinge = all("kbench/100_HingeLoss.cu", "hinge_loss", "BlockReduce");
    assert!(!hinge.is_empty());
    for s in &hinge {
        assert!(s.contains("t[(kp_dok0 ? (decltype(i % cols))kp_r0 : (i % cols))]"), "{s}");
        assert!(s.contains("kp_r0 += kp_rs0, kp_r0 -= kp_r0 >= kp_dd0 ? kp_dd0 : 0LL"), "{s}");
        assert!(s.contains("kp_acc = kp_acc / ((double)n);"), "{s}");
    }
    let pool = all("kbench/42_Max_Pooling_2D.cu", "max_pool2d", "GridStrideMap");
    assert!(!pool.is_empty(), "a window of k (4 in every launch) taps is a map's work");
    assert!(pool[0].contains("int oy = (kp_dok0 && kp_nok0 ? (decltype((o / ow) % oh))kp_qm0 : ((o / ow) % oh));"));
    assert!(pool[0].contains("long plane = (kp_dok1 ? (decltype(o / ((long)oh * ow)))kp_q1 : (o / ((long)oh * ow)));"));
    let isum = "// kernelpro: let N = 1 << 20\n// kernelpro: grid = ceil_div(N, 256)\n// kernelpro: block = 256\n\
                // kernelpro: total = inout int[1] zeros\n// kernelpro: x = in int[N] randint(0, 100)\n// kernelpro: n = N\n\
                __global__ void isum(int* total, const int* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                  if (i < n) atomicAdd(total, x[i] / 3);\n}\n";
    // A bias broadcast gets a counter; where the index is declared again in an inner scope it
    // is not the unit's there, and no division is counted.
    let bias = |body: &str| {
        format!(
            "// kernelpro: let N = 1 << 20\n// kernelpro: grid = ceil_div(N, 256)\n// kernelpro: block = 256\n\
             // kernelpro: y = out float[N]\n// kernelpro: x = in float[N] uniform(0, 1)\n// kernelpro: b = in float[64] uniform(0, 1)\n\
             // kernelpro: n = N\n// kernelpro: cols = 64\n\
             __global__ void bias(float* y, const float* x, const float* b, int n, int cols) {{\n\
               int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {{ {body} }}\n}}\n"
        )
    };
    let plain = recipe("GridStrideMap").rewrite(&bias("y[i] = x[i] + b[i % cols];"), "bias");
    assert!(plain.iter().any(|r| r.source.contains("b[(kp_dok0 ? (decltype(i % cols))kp_r0 : (i % cols))]")));
    let shadow = bias("float s = b[i % cols]; { const int i = 3; s += b[i % cols]; } y[i] = x[i] + s;");
    let shadowed = recipe("GridStrideMap").rewrite(&shadow, "bias");
    assert!(!shadowed.is_empty());
    assert!(shadowed.iter().all(|r| !r.source.contains("kp_r0")), "{}", shadowed[0].source);
    let ints = recipe("BlockReduce").rewrite(isum, "isum");
    assert!(!ints.is_empty());
    assert!(ints.iter().all(|r| r.source.contains("kp_acc += x[i] / 3;") && !r.source.contains("kp_acc = kp_acc /")));
}

/// A triangular product masks only the slices some output of the tile masks: a slice every
/// output counts whole (83% of them at 2048 for KernelBench's upper-triangular task) runs the
/// plain products, the same ones in the same order.
#[test]
fn a_triangular_products_inner_slices_run_unmasked() {
    let rws = recipe("TiledContraction").rewrite(&fixture("kbench/14_Matmul_upper_triangular.cu"), "triu_matmul");
    assert!(!rws.is_empty());
    for r in &rws {
        let s = &r.source;
        let split =
            s.find("if (kp_whole_tile && kp_k0 >= kp_wfirst && kp_k0 + 16 <= kp_wend) {").expect("a whole-slice test");
        let (plain, masked) = s[split..].split_once("} else {").expect("both paths");
        assert!(plain.contains("kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];") && !plain.contains("if ((i <= j)"));
        assert!(masked.contains("if ((i <= j) && k >= (i) && k < ((j) + 1)) kp_acc[kp_a][kp_b] +="), "{masked}");
    }
}
