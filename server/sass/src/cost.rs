//! What an instruction costs, in the few classes a reader of one source line
//! cares about first: FP64, local memory, atomics, barriers, long-latency
//! loads, conversions, then everything else.

use crate::disasm::Instruction;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CostClass {
    Fp64,
    LocalMemory,
    Atomic,
    Barrier,
    GlobalLoad,
    Conversion,
    GlobalStore,
    SharedMemory,
    Other,
}

impl CostClass {
    /// Classes worth listing before the rest.
    pub fn is_costly(self) -> bool {
        self <= CostClass::Conversion
    }

    /// `FP64`, `global loads`, … for a count of instructions.
    pub fn label(self) -> &'static str {
        match self {
            CostClass::Fp64 => "FP64",
            CostClass::LocalMemory => "local-memory",
            CostClass::Atomic => "atomics",
            CostClass::Barrier => "barriers",
            CostClass::GlobalLoad => "global loads",
            CostClass::Conversion => "conversions",
            CostClass::GlobalStore => "global stores",
            CostClass::SharedMemory => "shared-memory",
            CostClass::Other => "other",
        }
    }
}

/// Whether the instruction runs on the FP64 pipe or converts to or from double.
pub fn is_fp64(instruction: &Instruction) -> bool {
    let op = instruction.opcode.as_str();
    matches!(instruction.base_opcode(), "DADD" | "DMUL" | "DFMA" | "DSETP" | "DMNMX" | "DSET" | "DMMA")
        || (matches!(instruction.base_opcode(), "F2F" | "I2F" | "F2I") && op.contains("F64"))
        || op.starts_with("MUFU.RCP64")
        || op.starts_with("MUFU.RSQ64")
}

pub fn classify(instruction: &Instruction) -> CostClass {
    if is_fp64(instruction) {
        return CostClass::Fp64;
    }
    match instruction.base_opcode() {
        "LDL" | "STL" => CostClass::LocalMemory,
        "ATOM" | "ATOMG" | "RED" | "ATOMS" | "REDG" => CostClass::Atomic,
        "BAR" | "MEMBAR" | "SYNCS" | "ERRBAR" => CostClass::Barrier,
        "LDG" | "LD" | "LDGSTS" | "TEX" | "TLD" | "TLD4" | "SULD" | "UTMALDG" => CostClass::GlobalLoad,
        "F2F" | "I2F" | "F2I" | "I2I" | "F2FP" | "I2FP" | "F2IP" => CostClass::Conversion,
        "STG" | "ST" | "SUST" | "UTMASTG" => CostClass::GlobalStore,
        "LDS" | "STS" | "LDSM" | "STSM" => CostClass::SharedMemory,
        _ => CostClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(opcode: &str) -> CostClass {
        classify(&Instruction {
            offset: 0,
            predicate: None,
            opcode: opcode.into(),
            operands: String::new(),
            encoding: None,
            control: None,
        })
    }

    #[test]
    fn classes() {
        let got: Vec<_> = [
            "DFMA",
            "F2F.F64.F32",
            "F2F.F16.F32",
            "LDL.64",
            "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
            "BAR.SYNC.DEFER_BLOCKING",
            "LDG.E.128.CONSTANT",
            "I2F.U32",
            "STG.E",
            "LDS.128",
            "FFMA",
        ]
        .into_iter()
        .map(class)
        .collect();
        use CostClass::*;
        assert_eq!(
            got,
            [
                Fp64,
                Fp64,
                Conversion,
                LocalMemory,
                Atomic,
                Barrier,
                GlobalLoad,
                Conversion,
                GlobalStore,
                SharedMemory,
                Other
            ]
        );
    }
}
