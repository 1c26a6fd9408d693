//! `nvcc -Xptxas -v` reports: the H200 recording and local sm_80/sm_90 builds of
//! tests/fixtures/sass (record.sh), including spills under -maxrregcount.

use expect_test::{Expect, expect};
use kernelpro_sass::ptxas::parse_ptxas;

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/", $path))
    };
}

fn check(text: &str, expected: Expect) {
    let rendered: String = parse_ptxas(text)
        .iter()
        .map(|k| {
            format!(
                "{} ({}) {}: {} regs, {} B stack, spills {}/{} B, {} B smem, cmem {:?}, {} barriers\n",
                k.name,
                k.mangled,
                k.arch,
                k.registers,
                k.stack_frame,
                k.spill_stores,
                k.spill_loads,
                k.shared_static,
                k.constant_bytes,
                k.barriers
            )
        })
        .collect();
    expected.assert_eq(&rendered);
}

#[test]
fn h200_report() {
    check(
        fixture!("h200-probe/ptxas.txt"),
        expect![[r#"
        divergent (_Z9divergentPfPKfi) sm_90: 19 regs, 32 B stack, spills 0/0 B, 0 B smem, cmem [], 0 barriers
        transpose_conflicts (_Z19transpose_conflictsPfPKfi) sm_90: 14 regs, 0 B stack, spills 0/0 B, 4096 B smem, cmem [], 1 barriers
        matmul_naive (_Z12matmul_naivePKfS0_Pfi) sm_90: 32 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [], 0 barriers
        strided_copy (_Z12strided_copyPfPKfii) sm_90: 22 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [], 0 barriers
        saxpy_fp64 (_Z10saxpy_fp64PfPKffi) sm_90: 12 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [], 0 barriers
    "#]],
    );
}

#[test]
fn sm80_report_lists_constant_banks() {
    check(
        fixture!("sass/kernels_sm80.ptxas.txt"),
        expect![[r#"
        divergent (_Z9divergentPfPKfi) sm_80: 19 regs, 32 B stack, spills 0/0 B, 0 B smem, cmem [(0, 372), (2, 8)], 0 barriers
        transpose_conflicts (_Z19transpose_conflictsPfPKfi) sm_80: 14 regs, 0 B stack, spills 0/0 B, 4096 B smem, cmem [(0, 372)], 1 barriers
        matmul_naive (_Z12matmul_naivePKfS0_Pfi) sm_80: 32 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [(0, 380)], 0 barriers
        strided_copy (_Z12strided_copyPfPKfii) sm_80: 20 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [(0, 376)], 0 barriers
        saxpy_fp64 (_Z10saxpy_fp64PfPKffi) sm_80: 12 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [(0, 376)], 0 barriers
    "#]],
    );
}

#[test]
fn spills_and_static_shared_memory() {
    check(
        fixture!("sass/inlined_sm90.ptxas.txt"),
        expect![[r#"
        tile_sum (_Z8tile_sumP6float4PKS_) sm_90: 22 regs, 0 B stack, spills 0/0 B, 4096 B smem, cmem [], 1 barriers
        spill_heavy (_Z11spill_heavyPfPKfi) sm_90: 24 regs, 104 B stack, spills 124/180 B, 0 B smem, cmem [], 0 barriers
        smooth (_Z6smoothPfPKfi) sm_90: 12 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [], 0 barriers
    "#]],
    );
    check(
        fixture!("sass/inlined_sm80.ptxas.txt"),
        expect![[r#"
        tile_sum (_Z8tile_sumP6float4PKS_) sm_80: 19 regs, 0 B stack, spills 0/0 B, 4096 B smem, cmem [(0, 368)], 1 barriers
        spill_heavy (_Z11spill_heavyPfPKfi) sm_80: 24 regs, 88 B stack, spills 96/136 B, 0 B smem, cmem [(0, 372)], 0 barriers
        smooth (_Z6smoothPfPKfi) sm_80: 12 regs, 0 B stack, spills 0/0 B, 0 B smem, cmem [(0, 372)], 0 barriers
    "#]],
    );
}
