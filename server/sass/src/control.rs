//! Scheduling control bits of Volta-and-later SASS (sm_70 … sm_90).
//!
//! Each 128-bit instruction carries its scheduling decisions in bits 105..=125,
//! i.e. bits 41..=61 of the high 64-bit word (Jia et al., "Dissecting the NVIDIA
//! Volta GPU Architecture via Microbenchmarking", 2018; same layout as
//! CuAssembler's `decodeCtrlCodes`). From the least significant bit:
//!
//! | bits (hi word) | width | field |
//! |---|---|---|
//! | 41..=44 | 4 | stall cycles before the next instruction issues |
//! | 45      | 1 | yield bit: **0** means "yield to another warp" |
//! | 46..=48 | 3 | scoreboard set when the result is written (7 = none) |
//! | 49..=51 | 3 | scoreboard set when the sources have been read (7 = none) |
//! | 52..=57 | 6 | scoreboards this instruction waits on (bit i = SBi) |
//! | 58..=61 | 4 | operand reuse-cache flags (bit 0 = operand a, …) |

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlBits {
    pub stall: u8,
    /// The scheduler is hinted to switch to another warp after this instruction.
    pub yield_flag: bool,
    pub write_barrier: Option<u8>,
    pub read_barrier: Option<u8>,
    pub wait_mask: u8,
    pub reuse: u8,
}

const NO_BARRIER: u8 = 7;

impl ControlBits {
    /// Decodes the high 64-bit word of a 128-bit instruction.
    pub fn from_hi(hi: u64) -> Self {
        let code = hi >> 41;
        let field = |shift: u32, width: u32| ((code >> shift) & ((1 << width) - 1)) as u8;
        let barrier = |index: u8| (index != NO_BARRIER).then_some(index);
        ControlBits {
            stall: field(0, 4),
            yield_flag: field(4, 1) == 0,
            write_barrier: barrier(field(5, 3)),
            read_barrier: barrier(field(8, 3)),
            wait_mask: field(11, 6),
            reuse: field(17, 4),
        }
    }

    /// Scoreboard indices this instruction waits on, ascending.
    pub fn waits_on(&self) -> impl Iterator<Item = u8> + '_ {
        (0..6).filter(|i| self.wait_mask & (1 << i) != 0)
    }

    /// One line for a hover, e.g. `stall 4 cycles · sets write barrier SB0 · waits on SB1`.
    pub fn describe(&self) -> String {
        let plural = if self.stall == 1 { "" } else { "s" };
        let mut parts = vec![format!("stall {} cycle{plural}", self.stall)];
        if self.yield_flag {
            parts.push("yields".to_string());
        }
        if let Some(sb) = self.write_barrier {
            parts.push(format!("sets write barrier SB{sb}"));
        }
        if let Some(sb) = self.read_barrier {
            parts.push(format!("sets read barrier SB{sb}"));
        }
        let waits: Vec<String> = self.waits_on().map(|sb| format!("SB{sb}")).collect();
        if !waits.is_empty() {
            parts.push(format!("waits on {}", waits.join(", ")));
        }
        let reused: Vec<&str> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .filter(|(i, _)| self.reuse & (1 << i) != 0)
            .map(|(_, s)| *s)
            .collect();
        if !reused.is_empty() {
            parts.push(format!("reuses operand {}", reused.join(", ")));
        }
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(hi: u64, expected: &str) {
        assert_eq!(ControlBits::from_hi(hi).describe(), expected);
    }

    // Each comment shows `hi >> 41` in binary, split as
    // reuse | wait mask | read SB | write SB | yield bit | stall.
    #[test]
    fn hand_decoded_words() {
        // LDC R1, c[0x0][0x28]: hi >> 40 = 0xe22, >> 41 = 0x711
        // = 0000 | 000000 | 111 | 000 | 1 | 0001: stall 1, no yield, writes SB0.
        check(0x000e220000000800, "stall 1 cycle · sets write barrier SB0");
        // ISETP.GE.AND P0, PT, R9, UR4, PT: hi >> 41 = 0x7ed
        // = 0000 | 000000 | 111 | 111 | 0 | 1101: stall 13, yield bit 0.
        check(0x000fda000bf06270, "stall 13 cycles · yields");
        // IMAD R9, R9, UR4, R0 (after two S2R on SB1): hi >> 41 = 0x17f1
        // = 0000 | 000010 | 111 | 111 | 1 | 0001: waits on SB1.
        check(0x002fe2000f8e0200, "stall 1 cycle · waits on SB1");
        // LDG.E R10, desc[UR6][R10.64]: hi >> 41 = 0xb1
        // = 0000 | 000000 | 000 | 101 | 1 | 0001: read SB0 (address regs), write SB5.
        check(0x000162000c1e1900, "stall 1 cycle · sets write barrier SB5 · sets read barrier SB0");
        // FADD R6, R0.reuse, R0: hi >> 41 = 0x207f1
        // = 0001 | 000000 | 111 | 111 | 1 | 0001: reuse flag for operand a.
        check(0x040fe20000000000, "stall 1 cycle · reuses operand a");
    }

    #[test]
    fn wait_mask_lists_every_scoreboard() {
        // wait mask 0b100101 at bits 52..=57, stall 2, no barriers, yield bit set.
        let hi = (0b100101u64 << 52) | (0b111_111u64 << 46) | (1 << 45) | (2 << 41);
        let bits = ControlBits::from_hi(hi);
        assert_eq!(bits.waits_on().collect::<Vec<_>>(), vec![0, 2, 5]);
        assert_eq!(bits.describe(), "stall 2 cycles · waits on SB0, SB2, SB5");
    }
}
