//! The expert SIMT GEMM form ([`super::simt_gemm`]) on the public corpus's matmul styles, written
//! anew (`fixtures/structural/gemm/`): which forms each gets and with which loads, that every
//! candidate compiles for sm_90, the generated text's invariants (tile shapes, 16-byte global
//! loads only where the operand's layout allows them, each behind its run-time check), and the
//! bench's generated kernels (`bench/kernels/gemm/`) equal to the generator's output.

use super::tests::{compile_structural, fixture, recipe};
use expect_test::{Expect, expect};

/// The TiledContraction notes of `file`'s `kernel`, one a line.
fn notes(file: &str, kernel: &str) -> String {
    recipe("TiledContraction").rewrite(&fixture(file), kernel).iter().map(|rw| format!("{}\n", rw.note)).collect()
}

fn check(file: &str, kernel: &str, expected: Expect) {
    expected.assert_eq(&notes(file, kernel));
}

#[test]
fn gemm_styles_get_the_simt_forms() {
    check(
        "gemm/rowmajor_block32.cu",
        "gemm_rows_y",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((NR) * (MC), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((NR) * (MC), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (row, col) with k as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((NR) * (MC), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((NR) * (MC), 8192)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (row, col) with k as the contraction; launch block = 256, grid = ceil_div((NR) * (MC), 4096)
    "#]],
    );
    check(
        "gemm/a_colmajor.cu",
        "gemm_at_b",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((M) * (N), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction; launch block = 256, grid = ceil_div((M) * (N), 4096)
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 8192)
    "#]],
    );
    check(
        "gemm/bt_odd_sizes.cu",
        "gemm_bt_odd",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (r, c) with t as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((M) * (N), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (r, c) with t as the contraction; launch block = 256, grid = ceil_div((M) * (N), 4096)
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((M) * (N), 8192)
    "#]],
    );
    check(
        "gemm/alpha_beta_rowx_uint.cu",
        "sgemm_rowx",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((D) * (D), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (x, y) with i as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 8192)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (x, y) with i as the contraction; launch block = 256, grid = ceil_div((D) * (D), 4096)
    "#]],
    );
    check(
        "gemm/imatmul_block32.cu",
        "imatmul",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 16384); the sum the original kept in global memory is kept in a register and stored once (its final value)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((D) * (D), 16384); the sum the original kept in global memory is kept in a register and stored once (its final value)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (row, col) with k as the contraction; the sum the original kept in global memory is kept in a register and stored once (its final value)
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 8192); the sum the original kept in global memory is kept in a register and stored once (its final value)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned; launch block = 256, grid = ceil_div((D) * (D), 8192); the sum the original kept in global memory is kept in a register and stored once (its final value)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (row, col) with k as the contraction; launch block = 256, grid = ceil_div((D) * (D), 4096); the sum the original kept in global memory is kept in a register and stored once (its final value)
    "#]],
    );
    check(
        "gemm/rowptr_locals.cu",
        "gemm_rowptr",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, element loads
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, element loads, __launch_bounds__(256, 2)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, element loads
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, element loads
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, element loads; launch block = 256, grid = ceil_div((S) * (S), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, element loads, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((S) * (S), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction; launch block = 256, grid = ceil_div((S) * (S), 4096)
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, element loads; launch block = 256, grid = ceil_div((S) * (S), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, element loads; launch block = 256, grid = ceil_div((S) * (S), 8192)
    "#]],
    );
    check(
        "gemm/rowptr_a_only.cu",
        "gemm_rowptr_a",
        expect![[r#"
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of B where aligned, __launch_bounds__(256, 2)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of B where aligned
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of B where aligned
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of B where aligned; launch block = 256, grid = ceil_div((S) * (S), 16384)
        128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of B where aligned, __launch_bounds__(256, 2); launch block = 256, grid = ceil_div((S) * (S), 16384)
        64x64 shared-memory tiles, 4x4 outputs a thread, over (i, j) with p as the contraction; launch block = 256, grid = ceil_div((S) * (S), 4096)
        128x64 SIMT GEMM tiles, 16 deep, 8x4 outputs a thread, register prefetch, 16-byte loads of B where aligned; launch block = 256, grid = ceil_div((S) * (S), 8192)
        64x128 SIMT GEMM tiles, 16 deep, 4x8 outputs a thread, register prefetch, 16-byte loads of B where aligned; launch block = 256, grid = ceil_div((S) * (S), 8192)
    "#]],
    );
}

/// (fixture, kernel, the A and the B expression loaded as 16-byte vectors where the check holds;
/// empty: element loads only).
const VECTOR_LOADS: &[(&str, &str, [&str; 2])] = &[
    ("gemm/rowmajor_block32.cu", "gemm_rows_y", ["A[row * K + k]", "B[k * M + col]"]),
    ("gemm/a_colmajor.cu", "gemm_at_b", ["At[p * m + i]", "B[p * n + j]"]),
    ("gemm/bt_odd_sizes.cu", "gemm_bt_odd", ["A[(size_t)r * depth + t]", "Bt[(size_t)c * depth + t]"]),
    ("gemm/alpha_beta_rowx_uint.cu", "sgemm_rowx", ["A[x * K + i]", "B[i * N + y]"]),
    ("gemm/imatmul_block32.cu", "imatmul", ["a[row * N + k]", "b[k * N + col]"]),
    ("gemm/rowptr_locals.cu", "gemm_rowptr", ["", ""]),
    ("gemm/rowptr_a_only.cu", "gemm_rowptr_a", ["", "B[p * n + j]"]),
];

#[test]
fn every_gemm_style_candidate_compiles_for_sm_90() {
    let (compiled, failed) = compile_structural(VECTOR_LOADS.iter().map(|(f, k, _)| (*f, *k)));
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(compiled >= 35, "only {compiled} candidates compiled");
}

/// Each SIMT candidate's tiles are the shape its note names, and its 16-byte global loads are
/// exactly those of the operands whose layout allows them, each behind its run-time check.
#[test]
fn simt_text_keeps_its_invariants() {
    let mut wrong = Vec::new();
    for (file, kernel, vectors) in VECTOR_LOADS {
        let rws = recipe("TiledContraction").rewrite(&fixture(file), kernel);
        let simt: Vec<_> = rws.iter().filter(|rw| rw.note.contains("SIMT GEMM")).collect();
        if simt.len() < 4 {
            wrong.push(format!("{file}: {} SIMT candidates", simt.len()));
        }
        for rw in simt {
            let src = &rw.source;
            let (shape, rest) = rw.note.split_once(" SIMT GEMM tiles, ").unwrap();
            let (bm, bn) = shape.split_once('x').unwrap();
            let bk = rest.split_once(" deep").unwrap().0;
            let (bm, bn): (u32, u32) = (bm.parse().unwrap(), bn.parse().unwrap());
            let vt = if src.contains("int kp_acc") { "int4" } else { "float4" };
            let want = [
                format!("kp_As[2][{bk}][{bm} + 4];"),
                format!("kp_Bs[2][{bk}][{bn} + 4];"),
                format!("kp_acc[{}][{}];", bm / 16, bn / 16),
                "kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];".to_string(),
                "asm volatile(\"bar.sync 1, 256;\" ::: \"memory\");".to_string(),
            ];
            for w in want.iter().filter(|w| !src.contains(w.as_str())) {
                wrong.push(format!("{file} ({}): no `{w}`", rw.note));
            }
            let global = format!("*reinterpret_cast<const {vt}*>(&(");
            let loaded: Vec<&str> = src
                .match_indices(&global)
                .map(|(at, _)| src[at + global.len()..].split("))").next().unwrap())
                .collect();
            let mut distinct = loaded.clone();
            distinct.sort();
            distinct.dedup();
            let mut want: Vec<&str> = vectors.iter().copied().filter(|e| !e.is_empty()).collect();
            want.sort();
            if distinct != want {
                wrong.push(format!("{file} ({}): 16-byte loads of {distinct:?}, want {want:?}", rw.note));
            }
            for (v, e) in ["A", "B"].into_iter().zip(vectors) {
                let checked = src.contains(&format!("const bool kp_v{v} = (long long)("));
                if checked == e.is_empty() {
                    wrong.push(format!("{file} ({}): run-time check of {v} {checked}", rw.note));
                }
            }
            // Vector loads run only on whole tiles, unguarded (edge tiles take the element loads).
            if !want.is_empty() && (!src.contains(" && kp_whole) {") || src.contains(&format!("? {global}"))) {
                wrong.push(format!("{file} ({}): vector loads not confined to whole tiles", rw.note));
            }
            if (rw.note.contains("16-byte loads")) == want.is_empty() {
                wrong.push(format!("{file}: note `{}`", rw.note));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An operand whose index is not `plain term + other index * uniform + uniform` is loaded element
/// by element: `p` scaled, `p` in the other index's term, `p` twice, an offset that varies across
/// the block's threads or comes from a call (the run-time check must be the same in every thread:
/// its branch encloses barriers). An offset that is uniform (a parameter, a file constant) keeps
/// the vector path (its check then finds the tile misaligned at run time).
#[test]
fn vector_loads_need_an_affine_contiguous_index() {
    let plain = fixture("gemm/rowmajor_block32.cu");
    for (from, to, vector) in [
        ("A[row * K + k]", "A[row * K + 2 * k]", false),
        ("A[row * K + k]", "A[(row + k) * K + k]", false),
        ("A[row * K + k]", "A[row * K + k + k]", false),
        ("A[row * K + k]", "A[row * row + k]", false),
        ("A[row * K + k]", "A[row * K + k + (threadIdx.x & 3)]", false),
        ("A[row * K + k]", "A[row * K + k + min(K, 4)]", false),
        ("A[row * K + k]", "A[row * K + k + 1]", true),
        ("A[row * K + k]", "A[k + K * row]", true),
        ("A[row * K + k]", "A[row * K + k + PAD]", true),
    ] {
        let text = format!("#define PAD 4\n{}", plain.replace(from, to));
        assert_ne!(text, plain);
        let rws = recipe("TiledContraction").rewrite(&text, "gemm_rows_y");
        // A thread-varying offset may keep the kernel from being read as a GEMM at all.
        let first = rws.iter().find(|rw| rw.note.contains("SIMT GEMM"));
        assert!(first.is_some() || !vector, "{to}: no SIMT form");
        let got = first.is_some_and(|rw| rw.source.contains(&format!("*reinterpret_cast<const float4*>(&({to}))")));
        assert_eq!(got, vector, "{to}: {:?}", first.map(|rw| &rw.note));
        println!("{to}: {}", first.map_or("no SIMT form", |rw| rw.note.as_str()));
    }
}

/// The bench's kernels (`bench/kernels/gemm/`): each SIMT form of the naive GEMM and the 64x64
/// form, under their own launch, as the generator writes them (UPDATE_EXPECT=1 rewrites them).
#[test]
fn bench_kernels_are_the_generators_output() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/kernels/gemm");
    let naive = std::fs::read_to_string(dir.join("naive.cu")).unwrap();
    let rws = recipe("TiledContraction").rewrite(&naive, "sgemm_naive");
    let forms = [
        (
            "simt_128x128.cu",
            "128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned;",
        ),
        (
            "simt_128x128_2blocks.cu",
            "128x128 SIMT GEMM tiles, 8 deep, 8x8 outputs a thread, register prefetch, 16-byte loads of A and B where aligned, __launch_bounds__(256, 2);",
        ),
        ("simt_128x64.cu", "128x64 SIMT GEMM tiles,"),
        ("simt_64x128.cu", "64x128 SIMT GEMM tiles,"),
        ("tiled_64x64.cu", "64x64 shared-memory tiles,"),
    ];
    let mut stale = Vec::new();
    for (file, note) in forms {
        let rw = rws
            .iter()
            .find(|rw| rw.note.starts_with(note) && rw.note.contains("launch block = 256"))
            .unwrap_or_else(|| panic!("no `{note}` form under its own launch"));
        let want = format!("// TiledContraction's form: {}\n{}", rw.note, rw.source);
        let path = dir.join(file);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            if std::env::var_os("UPDATE_EXPECT").is_some() {
                std::fs::write(&path, &want).unwrap();
            } else {
                stale.push(file);
            }
        }
    }
    assert!(stale.is_empty(), "{stale:?} differ from the generator's output: UPDATE_EXPECT=1 rewrites them");
}
