//! The expert forms of issue 29's reduction and normalisation kernels from the public corpus,
//! on fixtures written anew: each style reads as its plain form (the same model facts and
//! structural rewrites), every candidate compiles with the real nvcc, and what must not be
//! rewritten is not.

use super::tests::{applied, compile_structural, fixture, model_facts, recipe};

/// (style fixture, plain fixture, kernel, the structural rewrites both must get).
const FORMS: &[(&str, &str, &str, &str)] = &[
    // A thread per element of a flat index recomputing its plane's statistics (instance norm):
    // rows of H*W read from the index, a warp or a block per plane.
    (
        "styles/instnorm_elem_brace_constexpr.cu",
        "styles/instnorm_elem_plain.cu",
        "instnorm_elem",
        "WarpUnits x4, HoistRowWork x7",
    ),
    // A block tree into shared memory whose root is added to one address (corpus_bruce_reduce_atomic):
    // every element added to it, then a grid-stride register sum, shuffles, one atomic per block.
    ("styles/sum_tree_atomic_alias_typedef.cu", "styles/sum_tree_atomic_plain.cu", "tree_sum", "BlockReduce x8"),
    // The same per grid row into the row's output (corpus_gau_sum_rows_block_atomic): the row is the
    // launch's fixed y, each row's blocks stride over its elements, one atomic per block.
    ("styles/rowsum_tree_atomic_ptr_offset.cu", "styles/rowsum_tree_atomic_plain.cu", "row_tree_sum", "BlockReduce x4"),
    // A thread per row that moves the input pointer to its row (corpus_gau_sum_rows_kahan).
    ("styles/rowsum_kahan_ptr_advance.cu", "rowsum_kahan.cu", "rowsum_kahan", "WarpUnits x4"),
];

/// A contraction's tiles re-emit the epilogue for every output a thread owns, with no restore: a
/// product whose epilogue moves a parameter is not tiled (the same product storing `c[row * n + col]`
/// is: `matmul_split_guards.cu` and the gemm styles).
#[test]
fn a_contraction_that_moves_a_parameter_is_not_tiled() {
    let text = fixture("styles/matmul_moved_output.cu");
    assert!(recipe("TiledContraction").rewrite(&text, "matmul_moved").is_empty());
}

/// A parameter the unit moves (`m += r * ncols;`) starts every unit from the launch's value: a warp
/// walking several rows (any grid smaller than a warp a row, the original launch's included) reads
/// each row, not the sum of the offsets (which read past the input on the H100).
#[test]
fn a_moved_parameter_starts_every_unit_from_the_launch() {
    let text = fixture("styles/rowsum_kahan_ptr_advance.cu");
    let rws = recipe("WarpUnits").rewrite(&text, "rowsum_kahan");
    assert!(!rws.is_empty());
    for rw in &rws {
        let src = &rw.source[rw.source.find("__global__").unwrap()..];
        let (save, restore, advance) =
            (src.find("const auto kp_0_m = m;"), src.find("m = kp_0_m;"), src.find("m += r * ncols;"));
        assert!(save.is_some() && restore.is_some() && advance.is_some(), "{src}");
        assert!(save < src.find("for (long long kp_u"), "saved before the unit loop: {src}");
        assert!(restore < advance, "restored before the unit moves it: {src}");
    }
}

#[test]
fn each_form_reads_as_its_plain_style() {
    let mut wrong = Vec::new();
    for (style, plain, kernel, want) in FORMS {
        for file in [plain, style] {
            let got = applied(file, kernel);
            if got != *want {
                wrong.push(format!("{file}: rewrites `{got}`, want `{want}`"));
            }
        }
        let (got, plain_facts) = (model_facts(style, kernel), model_facts(plain, kernel));
        if got != plain_facts {
            wrong.push(format!("{style}: model facts\n{got}\nthe plain form's\n{plain_facts}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn every_form_rewrite_compiles_for_sm_90() {
    let cases = FORMS.iter().flat_map(|(style, plain, kernel, _)| [(*plain, *kernel), (*style, *kernel)]);
    let (compiled, failed) = compile_structural(cases);
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(compiled >= 4, "only {compiled} candidates compiled");
}

/// The plane's flat rewrite: each plane's statistics once, over one loop of H*W elements split
/// across the block, then the elements re-bound from the row.
#[test]
fn flat_rows_hoist_the_plane_once() {
    let text = fixture("styles/instnorm_elem_plain.cu");
    let rws = recipe("HoistRowWork").rewrite(&text, "instnorm_elem");
    let block = rws.iter().find(|rw| rw.note.contains("one block per unit")).expect("a block per plane");
    assert!(block.note.starts_with("the flat index read as rows of 3072 elements"), "{}", block.note);
    let src = &block.source;
    assert!(src.contains("kp_u < (long long)(64)"), "{src}");
    assert!(src.contains("for (long long kp_f = 0 + kp_lane; kp_f < 3072LL; kp_f += kp_team)"), "{src}");
    assert!(src.contains("const int j = (int)((kp_f / 1LL) % 64LL);"), "{src}");
    assert!(src.contains("const int i = (int)((kp_f / 64LL) % 48LL);"), "{src}");
    assert!(src.contains("int idx = (int)(kp_row * 3072LL + kp_e);"), "{src}");
}

/// Where a name the row's work reads changes inside a row, or the rows do not tile the units,
/// there is no flat-row form.
#[test]
fn flat_rows_need_names_constant_over_each_row() {
    let plain = fixture("styles/instnorm_elem_plain.cu");
    // The plane index from a divisor that is not the row length: `c` changes inside a row.
    let shifted = plain.replace("int c = (idx % (C * H * W)) / (H * W);", "int c = (idx % (C * H * W)) / (H * 32);");
    assert_ne!(shifted, plain);
    // The row's loop nest one row short of the plane: 47 * 64 elements do not tile the units.
    let short = plain.replacen("for (int i = 0; i < H; i++)", "for (int i = 0; i < H - 1; i++)", 1);
    assert_ne!(short, plain);
    // The element's statement updates the row's running sum: each element had its own copy before.
    let carried = plain.replace("y[idx] = (x[idx] - mean) * inv;", "sum += x[idx];\n  y[idx] = (sum - mean) * inv;");
    assert_ne!(carried, plain);
    for text in [shifted, short, carried] {
        let notes: Vec<String> =
            recipe("HoistRowWork").rewrite(&text, "instnorm_elem").into_iter().map(|rw| rw.note).collect();
        assert!(notes.is_empty(), "{notes:#?}");
    }
}

/// A tree that does not span the block (its root is then not the block's sum), or a root stored
/// per block instead of added to one address, is not read as a sum of every element.
#[test]
fn tree_atomic_needs_the_whole_block_into_one_address() {
    let plain = fixture("styles/sum_tree_atomic_plain.cu");
    let partial = plain.replace("int stride = blockDim.x / 2;", "int stride = 64;");
    let per_block = plain.replace("atomicAdd(total, s[0]);", "total[blockIdx.x] = s[0];");
    let per_thread = plain.replace("atomicAdd(total, s[0]);", "atomicAdd(total + threadIdx.x, s[0]);");
    for text in [partial, per_block, per_thread] {
        assert_ne!(text, plain);
        let notes: Vec<String> =
            recipe("BlockReduce").rewrite(&text, "tree_sum").into_iter().map(|rw| rw.note).collect();
        assert!(notes.is_empty(), "{notes:#?}");
    }
}

/// A 2D thread per element whose element statement updates its row's running value is not hoisted:
/// the thread-per-row form would share that value across the row's elements.
#[test]
fn hoisted_rows_keep_each_elements_own_copy() {
    let plain = fixture("center_rows_flat_sizet.cu");
    assert!(!recipe("HoistRowWork").rewrite(&plain, "center_rows").is_empty());
    let carried = plain.replace(
        "y[r * cols + c] = x[r * cols + c] - mean;",
        "mean += x[r * cols + c];\n  y[r * cols + c] = x[r * cols + c] - mean;",
    );
    assert_ne!(carried, plain);
    let notes: Vec<String> =
        recipe("HoistRowWork").rewrite(&carried, "center_rows").into_iter().map(|rw| rw.note).collect();
    assert!(notes.is_empty(), "{notes:#?}");
}
