//! Plain-language documentation of SASS opcodes for sm_80 and sm_90, from the
//! table in `data/opcodes.tsv`.
//!
//! A table key is a base opcode (`LDG`) or a base with the modifiers that change
//! meaning or cost (`LDG.128`, `F2F.F64.F32`). An instruction such as
//! `LDG.E.128.CONSTANT` matches every key whose modifiers appear in it in the
//! same order, so the order-sensitive conversions (`F2F.F64.F32` vs
//! `F2F.F32.F64`) never mix.

use std::sync::OnceLock;

const TABLE: &str = include_str!("../data/opcodes.tsv");

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpcodeDoc {
    /// The table key, e.g. `LDG.128`.
    pub key: &'static str,
    /// First architecture with this instruction, e.g. `sm_90`.
    pub since: &'static str,
    /// Nsight Compute pipe name (`fma`, `lsu`, `fp64`, `tensor`, …).
    pub pipe: &'static str,
    pub meaning: &'static str,
    pub cost: &'static str,
}

impl OpcodeDoc {
    fn base(&self) -> &'static str {
        self.key.split('.').next().unwrap_or(self.key)
    }
    fn modifiers(&self) -> impl Iterator<Item = &'static str> {
        self.key.split('.').skip(1)
    }
}

/// Every documented opcode, in table order.
pub fn table() -> &'static [OpcodeDoc] {
    static DOCS: OnceLock<Vec<OpcodeDoc>> = OnceLock::new();
    DOCS.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|line| {
                let mut cols = line.split('\t');
                let mut col = || cols.next().unwrap_or("").trim();
                OpcodeDoc { key: col(), since: col(), pipe: col(), meaning: col(), cost: col() }
            })
            .collect()
    })
}

/// The most specific entry for `opcode` (`F2F.F64.F32` → that variant, `F2F.F16.F64`
/// → `F2F`), or `None` when the base opcode is not documented.
pub fn lookup(opcode: &str) -> Option<&'static OpcodeDoc> {
    lookup_all(opcode).pop()
}

/// Every entry that applies to `opcode`, from the base entry to the most specific
/// variant: `LDG.E.128.CONSTANT` → `LDG`, `LDG.128`, `LDG.CONSTANT`.
pub fn lookup_all(opcode: &str) -> Vec<&'static OpcodeDoc> {
    let mut parts = opcode.split('.');
    let base = parts.next().unwrap_or(opcode);
    let modifiers: Vec<&str> = parts.collect();
    let mut matches: Vec<&OpcodeDoc> =
        table().iter().filter(|doc| doc.base() == base && in_order(doc.modifiers(), &modifiers)).collect();
    // Stable sort: among equally specific variants the table order decides.
    matches.sort_by_key(|doc| doc.modifiers().count());
    matches
}

/// Whether `wanted` is a subsequence of `present`.
fn in_order<'a>(wanted: impl Iterator<Item = &'a str>, present: &[&str]) -> bool {
    let mut rest = present.iter();
    wanted.into_iter().all(|w| rest.any(|p| *p == w))
}

/// The table as Markdown, for `docs/opcodes.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# SASS opcodes\n\n\
         Generated from `server/sass/data/opcodes.tsv` (the test `opcodes_doc_is_current` rewrites it with \
         `UPDATE_EXPECT=1`). Hovers show the base entry plus every variant whose modifiers appear in the \
         instruction, in order.\n\n\
         | opcode | since | pipe | meaning | cost |\n|---|---|---|---|---|\n",
    );
    for doc in table() {
        let cells = [doc.key, doc.since, doc.pipe, doc.meaning, doc.cost].map(|c| c.replace('|', "\\|"));
        out.push_str(&format!("| `{}` | {} | {} | {} | {} |\n", cells[0], cells[1], cells[2], cells[3], cells[4]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(opcode: &str, expected: &[&str]) {
        let keys: Vec<&str> = lookup_all(opcode).iter().map(|d| d.key).collect();
        assert_eq!(keys, expected, "{opcode}");
    }

    #[test]
    fn variants_match_in_order() {
        check("F2F.F64.F32", &["F2F", "F2F.F64.F32"]);
        check("F2F.F32.F64", &["F2F", "F2F.F32.F64"]);
        check("F2F.F16.F64", &["F2F"]);
        check("LDG.E.128.CONSTANT", &["LDG", "LDG.128", "LDG.CONSTANT"]);
        check("LDG.E", &["LDG"]);
        check("STS.128", &["STS", "STS.128"]);
        check("I2F.F64.S64", &["I2F", "I2F.F64"]);
        check("ISETP.GE.U32.AND.EX", &["ISETP", "ISETP.EX", "ISETP.U32"]);
        check("NOSUCHOP.X", &[]);
        assert_eq!(lookup("LDG.E.128.CONSTANT").map(|d| d.key), Some("LDG.CONSTANT"));
        assert_eq!(lookup("DFMA").map(|d| d.pipe), Some("fp64"));
    }

    #[test]
    fn table_is_well_formed() {
        for doc in table() {
            assert!(!doc.meaning.is_empty() && !doc.cost.is_empty(), "{doc:?}");
            assert!(doc.since.starts_with("sm_"), "{doc:?}");
            let base_documented = table().iter().any(|d| d.key == doc.base());
            assert!(base_documented, "variant {} has no base entry", doc.key);
        }
        let keys: std::collections::HashSet<_> = table().iter().map(|d| d.key).collect();
        assert_eq!(keys.len(), table().len(), "duplicate keys");
    }
}
