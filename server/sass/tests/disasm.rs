//! SASS listings recorded from tests/fixtures/kernels.cu and inlined.cu
//! (tests/fixtures/sass/record.sh) and on the H200 (tests/fixtures/h200-probe).

use expect_test::{Expect, expect};
use kernelpro_sass::disasm::{Disassembly, Function, parse_sass};

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/", $path))
    };
}

/// The first `n` instructions of `name` with predicate, control bits and the
/// source lines that map to each.
fn render(function: &Function, n: usize) -> String {
    let mut out = format!(
        "{} = {} [{}] {} instructions\n",
        function.mangled,
        function.demangled,
        function.arch.as_deref().unwrap_or("?"),
        function.instructions.len()
    );
    for (index, ins) in function.instructions.iter().enumerate().take(n) {
        let sources: Vec<String> = function
            .lines
            .iter()
            .filter(|l| l.instructions.contains(&index))
            .map(|l| format!("{}:{}", l.source.file, l.source.line))
            .collect();
        let guard = ins.predicate.as_deref().map(|p| format!("@{p} ")).unwrap_or_default();
        let control = ins.control.map(|c| c.describe()).unwrap_or_default();
        out += &format!(
            "{:04x} {guard}{} [{}] {}| {control} | {}\n",
            ins.offset,
            ins.opcode,
            ins.base_opcode(),
            if ins.operands.is_empty() { String::new() } else { format!("{} ", ins.operands) },
            sources.join(" ")
        );
    }
    out
}

fn check(text: &str, function: &str, n: usize, expected: Expect) {
    let disassembly = parse_sass(text);
    let function = disassembly.function(function).expect("function in fixture");
    expected.assert_eq(&render(function, n));
}

#[test]
fn nvdisasm_hex_with_line_info() {
    check(
        fixture!("sass/kernels_sm90.nvdisasm.txt"),
        "saxpy_fp64",
        12,
        expect![[r#"
            _Z10saxpy_fp64PfPKffi = saxpy_fp64(float*, float const*, float, int) [sm_90] 32 instructions
            0000 LDC [LDC] R1, c[0x0][0x28] | stall 1 cycle | kernels.cu:7
            0010 S2R [S2R] R0, SR_TID.X | stall 7 cycles · sets write barrier SB0 | kernels.cu:8
            0020 S2UR [S2UR] UR4, SR_CTAID.X | stall 8 cycles · sets write barrier SB0 | kernels.cu:8
            0030 LDC [LDC] R5, c[0x0][RZ] | stall 2 cycles · sets write barrier SB0 | kernels.cu:8
            0040 IMAD [IMAD] R5, R5, UR4, R0 | stall 1 cycle · waits on SB0 | kernels.cu:8
            0050 ULDC [ULDC] UR4, c[0x0][0x224] | stall 4 cycles · yields | kernels.cu:9
            0060 ISETP.GE.AND [ISETP] P0, PT, R5, UR4, PT | stall 13 cycles · yields | kernels.cu:9
            0070 @P0 EXIT [EXIT] | stall 5 cycles | kernels.cu:9
            0080 LDC.64 [LDC] R2, c[0x0][0x218] | stall 1 cycle · sets write barrier SB0 | kernels.cu:9
            0090 ULDC.64 [ULDC] UR4, c[0x0][0x208] | stall 1 cycle | kernels.cu:9
            00a0 ULDC [ULDC] UR6, c[0x0][0x220] | stall 6 cycles · yields | kernels.cu:9
            00b0 LDC.64 [LDC] R6, c[0x0][0x210] | stall 1 cycle · sets write barrier SB1 | kernels.cu:9
        "#]],
    );
}

#[test]
fn inlined_header_lines_map_to_header_and_call_site() {
    check(
        fixture!("sass/inlined_sm90.nvdisasm.txt"),
        "smooth",
        20,
        expect![[r#"
            _Z6smoothPfPKfi = smooth(float*, float const*, int) [sm_90] 32 instructions
            0000 LDC [LDC] R1, c[0x0][0x28] | stall 1 cycle | inlined.cu:4
            0010 S2R [S2R] R0, SR_TID.X | stall 7 cycles · sets write barrier SB0 | inlined.cu:5
            0020 S2UR [S2UR] UR4, SR_CTAID.X | stall 8 cycles · sets write barrier SB0 | inlined.cu:5
            0030 LDC [LDC] R7, c[0x0][RZ] | stall 2 cycles · sets write barrier SB0 | inlined.cu:5
            0040 IMAD [IMAD] R7, R7, UR4, R0 | stall 1 cycle · waits on SB0 | inlined.cu:5
            0050 ULDC [ULDC] UR4, c[0x0][0x220] | stall 4 cycles · yields | inlined.cu:6
            0060 ISETP.GE.AND [ISETP] P0, PT, R7, UR4, PT | stall 13 cycles · yields | inlined.cu:6
            0070 @P0 EXIT [EXIT] | stall 5 cycles | inlined.cu:6
            0080 LDC.64 [LDC] R2, c[0x0][0x218] | stall 1 cycle · sets write barrier SB0 | inlined.cu:6
            0090 ULDC.64 [ULDC] UR4, c[0x0][0x208] | stall 7 cycles · yields | inlined.cu:6
            00a0 LDC.64 [LDC] R4, c[0x0][0x210] | stall 1 cycle · sets write barrier SB1 | inlined.cu:6
            00b0 IMAD.WIDE [IMAD] R2, R7, 0x4, R2 | stall 6 cycles · yields · waits on SB0 | inlined.cu:6
            00c0 LDG.E [LDG] R2, desc[UR4][R2.64] | stall 1 cycle · sets write barrier SB2 | inlined.cu:6
            00d0 IMAD.WIDE [IMAD] R4, R7, 0x4, R4 | stall 4 cycles · yields · waits on SB1 | inlined.cu:6
            00e0 FADD.SAT [FADD] R0, RZ, R2 | stall 4 cycles · yields · waits on SB2 | inlined.cu:6 vec_math.cuh:3
            00f0 FADD [FADD] R6, R0.reuse, R0 | stall 1 cycle · reuses operand a | inlined.cu:6 vec_math.cuh:7
            0100 FMUL [FMUL] R0, R0, R0 | stall 3 cycles · yields | inlined.cu:6 vec_math.cuh:7
            0110 FADD [FADD] R9, -R6, 3 | stall 4 cycles · yields | inlined.cu:6 vec_math.cuh:7
            0120 FMUL [FMUL] R9, R0, R9 | stall 5 cycles · yields | inlined.cu:6 vec_math.cuh:7
            0130 STG.E [STG] desc[UR4][R4.64], R9 | stall 1 cycle | inlined.cu:6
        "#]],
    );
    let disassembly = parse_sass(fixture!("sass/inlined_sm90.nvdisasm.txt"));
    let smooth = disassembly.function("smooth").unwrap();
    let fadd_sat = smooth.instructions.iter().position(|i| i.opcode == "FADD.SAT").unwrap();
    assert!(smooth.instructions_at("vec_math.cuh", 3).contains(&fadd_sat));
    assert!(smooth.instructions_at("inlined.cu", 6).contains(&fadd_sat));
    // Paths match by suffix, since nvcc records them as given on its command line.
    assert!(smooth.instructions_at("/home/me/project/vec_math.cuh", 3).contains(&fadd_sat));
}

#[test]
fn cuobjdump_has_no_line_info() {
    check(
        fixture!("h200-probe/sass.txt"),
        "_Z19transpose_conflictsPfPKfi",
        8,
        expect![[r#"
            _Z19transpose_conflictsPfPKfi = transpose_conflicts(float*, float const*, int) [sm_90] 40 instructions
            0000 LDC [LDC] R1, c[0x0][0x28] | stall 1 cycle | 
            0010 S2R [S2R] R7, SR_CTAID.X | stall 7 cycles · sets write barrier SB0 | 
            0020 LDC.64 [LDC] R2, c[0x0][0x218] | stall 1 cycle · sets write barrier SB1 | 
            0030 ULDC [ULDC] UR8, c[0x0][0x220] | stall 1 cycle | 
            0040 ULDC.64 [ULDC] UR6, c[0x0][0x208] | stall 1 cycle | 
            0050 S2R [S2R] R8, SR_TID.X | stall 1 cycle · sets write barrier SB0 | 
            0060 S2R [S2R] R11, SR_CTAID.Y | stall 1 cycle · sets write barrier SB2 | 
            0070 S2R [S2R] R10, SR_TID.Y | stall 1 cycle · sets write barrier SB2 | 
        "#]],
    );
}

/// (offset, predicate, opcode) of one instruction.
type Listed = (u32, Option<String>, String);

/// Every function's instructions, sorted by mangled name.
fn opcodes(d: &Disassembly) -> Vec<(String, Vec<Listed>)> {
    let mut functions: Vec<_> = d
        .functions
        .iter()
        .map(|f| {
            (
                f.mangled.clone(),
                f.instructions.iter().map(|i| (i.offset, i.predicate.clone(), i.opcode.clone())).collect(),
            )
        })
        .collect();
    functions.sort();
    functions
}

#[test]
fn cuobjdump_and_nvdisasm_agree_on_the_h200_recording() {
    let cuobjdump = parse_sass(fixture!("h200-probe/sass.txt"));
    let nvdisasm = parse_sass(fixture!("h200-probe/nvdisasm_g.txt"));
    assert_eq!(cuobjdump.functions.len(), 5);
    assert_eq!(opcodes(&cuobjdump), opcodes(&nvdisasm));
}

#[test]
fn cuobjdump_and_nvdisasm_decode_the_same_encodings() {
    let cuobjdump = parse_sass(fixture!("sass/kernels_sm80.cuobjdump.txt"));
    let nvdisasm = parse_sass(fixture!("sass/kernels_sm80.nvdisasm.txt"));
    for function in &nvdisasm.functions {
        let other = cuobjdump.function(&function.mangled).unwrap();
        let encodings = |f: &Function| f.instructions.iter().map(|i| i.encoding).collect::<Vec<_>>();
        assert_eq!(encodings(function), encodings(other), "{}", function.name);
        assert!(function.instructions.iter().all(|i| i.control.is_some()));
    }
}
