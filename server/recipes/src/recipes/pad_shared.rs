//! Pads 2D shared tiles by one column (`[32][32]` → `[32][33]`) so that
//! column accesses fall in different banks.

use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::{descendants, uses};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct PadSharedTile;

/// Words per bank row: 32 banks of 4 bytes.
const BANK_ROW_BYTES: usize = 128;

fn elem_bytes(ty: &str) -> Option<usize> {
    match ty {
        "float" | "int" | "unsigned" | "unsigned int" => Some(4),
        "double" | "long long" | "unsigned long long" => Some(8),
        _ => None,
    }
}

/// `name[R][C]`: the name node and the inner dimension's literal node.
fn tile_2d(decl: Node) -> Option<(Node, Node)> {
    let outer = decl.child_by_field_name("declarator").filter(|d| d.kind() == "array_declarator")?;
    let inner_size = outer.child_by_field_name("size")?;
    let inner = outer.child_by_field_name("declarator").filter(|d| d.kind() == "array_declarator")?;
    let name = inner.child_by_field_name("declarator").filter(|d| d.kind() == "identifier")?;
    Some((name, inner_size))
}

impl Recipe for PadSharedTile {
    fn name(&self) -> &'static str {
        "PadSharedTile"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::SharedBankConflict, Code::SharedBankConflicts]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let mut edits = Edits::default();
        let mut notes = Vec::new();
        for decl in descendants(k.body()).into_iter().filter(|n| n.kind() == "declaration") {
            if !descendants(decl).iter().any(|n| k.text_of(*n) == "__shared__") {
                continue;
            }
            let Some(bytes) = decl.child_by_field_name("type").and_then(|t| elem_bytes(k.text_of(t))) else { continue };
            let Some((name, size)) = tile_2d(decl) else { continue };
            let Ok(cols) = k.text_of(size).parse::<usize>() else { continue };
            // Padding is safe only when every use indexes both dimensions (no flat pointer walks).
            let tile = k.text_of(name);
            let indexed_2d = uses(k.body(), text, tile).iter().skip(1).all(|u| {
                u.parent()
                    .filter(|p| p.kind() == "subscript_expression")
                    .and_then(|p| p.parent())
                    .is_some_and(|pp| pp.kind() == "subscript_expression")
            });
            if cols * bytes % BANK_ROW_BYTES != 0 || !indexed_2d {
                continue;
            }
            edits.replace(size.byte_range(), (cols + 1).to_string());
            notes.push(format!("{tile}[..][{}]", cols + 1));
        }
        if edits.is_empty() {
            return Vec::new();
        }
        let note = format!("pad {}", notes.join(", "));
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
