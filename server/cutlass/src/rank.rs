//! How relevant one matching line is: definitions of the queried identifier
//! first, then headers under `include/`, then examples; comments last.

use crate::index::FileKind;
use crate::tokens::is_ident_byte;

const TYPE_DEFINITION: f32 = 10.0;
const FUNCTION_DEFINITION: f32 = 6.0;
const HEADER: f32 = 2.0;
const EXAMPLE: f32 = 1.0;
const COMMENT: f32 = -1.0;

/// Functions are defined at namespace or class scope; a deeper `X(` line is a
/// call split over lines.
const MAX_DEFINITION_INDENT: usize = 4;

/// The score of `line`, a line of a file of `kind` that matched; `ident` is
/// the queried identifier when the query was one.
pub fn score(kind: FileKind, line: &str, ident: Option<&str>) -> f32 {
    let location = match kind {
        FileKind::Header => HEADER,
        FileKind::Example => EXAMPLE,
        FileKind::Other => 0.0,
    };
    let trimmed = line.trim_start();
    let comment =
        if trimmed.starts_with("//") || trimmed.starts_with('*') || trimmed.starts_with("/*") { COMMENT } else { 0.0 };
    let definition = ident.map_or(0.0, |ident| {
        if comment != 0.0 {
            0.0
        } else if defines_type(trimmed, ident) {
            TYPE_DEFINITION
        } else if indentation(line) <= MAX_DEFINITION_INDENT && defines_function(trimmed, ident) {
            FUNCTION_DEFINITION
        } else {
            0.0
        }
    });
    definition + location + comment
}

/// `struct X`, `class X`, `using X =`, `#define X`, `enum class X`, `namespace X`, `concept X`.
fn defines_type(line: &str, ident: &str) -> bool {
    const INTRODUCERS: [&str; 8] = ["struct", "class", "union", "enum", "using", "#define", "namespace", "concept"];
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '{' || c == ':' || c == '<' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| INTRODUCERS.contains(&w[0]) && w[1] == ident)
        || words.windows(3).any(|w| w[0] == "enum" && w[1] == "class" && w[2] == ident)
}

/// `X(` preceded only by a return type or attributes: no assignment, call
/// receiver, `return` or enclosing parenthesis, and not a statement ending in `;`.
fn defines_function(line: &str, ident: &str) -> bool {
    let Some(at) = find_word(line, ident) else {
        return false;
    };
    let before = &line[..at];
    let after = line[at + ident.len()..].trim_start();
    after.starts_with('(')
        && !before.contains(['=', '(', '.', ',', '>'])
        && !before.contains("return")
        && !before.ends_with("::")
        && !line.trim_end().ends_with(';')
}

fn indentation(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).map(|c| if c == '\t' { 4 } else { 1 }).sum()
}

/// The first occurrence of `word` in `line` as a whole identifier.
fn find_word(line: &str, word: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    line.match_indices(word).map(|(i, _)| i).find(|&i| {
        let end = i + word.len();
        (i == 0 || !is_ident_byte(bytes[i - 1])) && (end == bytes.len() || !is_ident_byte(bytes[end]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expected: f32) {
        assert_eq!(score(FileKind::Header, line, Some("make_tiled_mma")), expected, "{line}");
    }

    #[test]
    fn definitions_rank_above_uses() {
        check("struct make_tiled_mma {", 12.0);
        check("using make_tiled_mma = int;", 12.0);
        check("make_tiled_mma(MMA_Atom<MMA_Op> const& mma_atom,", 8.0);
        check("CUTE_HOST_DEVICE constexpr auto make_tiled_mma(Op const&)", 8.0);
        check("auto tiled_mma = make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS{});", 2.0);
        check("return make_tiled_mma(atom, layout);", 2.0);
        check("  cute::make_tiled_mma(op)", 2.0);
        check("      make_tiled_mma(", 2.0);
        check("// see make_tiled_mma(", 1.0);
    }
}
