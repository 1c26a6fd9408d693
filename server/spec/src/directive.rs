//! The syntax of one spec line: which directive it is and where its parts are.

use crate::Dir;
use crate::expr::{MAX_NAME_LEN, shown};
use crate::source::{SpecLine, split_top_level};

/// The most values a `tune` list may hold: the optimizer tries each, so a
/// longer list is a mistake (or an attack on the search).
pub const MAX_TUNE_VALUES: usize = 64;

/// A slice of a spec line with its absolute byte column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Piece<'a> {
    pub text: &'a str,
    pub col: u32,
}

impl<'a> Piece<'a> {
    fn sub(&self, offset: usize, len: usize) -> Piece<'a> {
        Piece { text: &self.text[offset..offset + len], col: self.col + offset as u32 }
    }
    /// The same text without surrounding whitespace, column adjusted.
    pub fn trim(&self) -> Piece<'a> {
        let lead = self.text.len() - self.text.trim_start().len();
        self.sub(lead, self.text.trim().len())
    }
    pub fn end_col(&self) -> u32 {
        self.col + self.text.len() as u32
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dims {
    Grid,
    Block,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InitSyntax<'a> {
    pub name: Piece<'a>,
    pub args: Vec<Piece<'a>>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Directive<'a> {
    Let { name: Piece<'a>, expr: Piece<'a> },
    Tune { name: Piece<'a>, values: Vec<Piece<'a>>, list: Piece<'a> },
    Dims { which: Dims, exprs: Vec<Piece<'a>> },
    Smem(Piece<'a>),
    Seed(Piece<'a>),
    Check { rtol: Option<Piece<'a>>, atol: Option<Piece<'a>> },
    Instantiate(Piece<'a>),
    Op(Piece<'a>),
    Buffer { param: Piece<'a>, dir: Dir, ty: Piece<'a>, count: Piece<'a>, init: Option<InitSyntax<'a>> },
    Scalar { param: Piece<'a>, value: Piece<'a> },
}

/// A syntax error: message and absolute column range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SyntaxError {
    pub message: String,
    pub start: u32,
    pub end: u32,
}

const DIRECTIVES: &str = "let, tune, grid, block, smem, seed, check, instantiate, op, or PARAM = ...";

fn error(message: impl Into<String>, at: Piece) -> SyntaxError {
    SyntaxError { message: message.into(), start: at.col, end: at.end_col().max(at.col + 1) }
}

/// `name` as a name: an identifier of at most [`MAX_NAME_LEN`] characters.
fn name(name: Piece) -> Result<Piece, SyntaxError> {
    if !is_ident(name.text) {
        return Err(error(format!("`{}` is not a name: names are letters, digits and `_`", shown(name.text)), name));
    }
    if name.text.len() > MAX_NAME_LEN {
        return Err(error(
            format!("`{}` is {} characters long: names have at most {MAX_NAME_LEN}", shown(name.text), name.text.len()),
            name,
        ));
    }
    Ok(name)
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits `piece` at the first `sep`, both sides trimmed.
fn split_once<'a>(piece: Piece<'a>, sep: &str) -> Option<(Piece<'a>, Piece<'a>)> {
    let at = piece.text.find(sep)?;
    let rest = piece.text.len() - at - sep.len();
    Some((piece.sub(0, at).trim(), piece.sub(at + sep.len(), rest).trim()))
}

/// The first whitespace-delimited word and the trimmed rest.
fn first_word(piece: Piece) -> (Piece, Piece) {
    let len = piece.text.find(char::is_whitespace).unwrap_or(piece.text.len());
    (piece.sub(0, len), piece.sub(len, piece.text.len() - len).trim())
}

/// The inside of `(...)` when `piece` is exactly one bracketed group.
fn inside<'a>(piece: Piece<'a>, open: char, close: char) -> Option<Piece<'a>> {
    let t = piece.text;
    if !t.starts_with(open) || !t.ends_with(close) || t.len() < 2 {
        return None;
    }
    let mut depth = 0;
    for (i, c) in t.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 && i != t.len() - 1 {
                return None;
            }
        }
    }
    Some(piece.sub(1, t.len() - 2))
}

fn list(piece: Piece) -> Vec<Piece> {
    if piece.text.trim().is_empty() {
        return Vec::new();
    }
    split_top_level(piece.text).into_iter().map(|(off, part)| piece.sub(off, part.len()).trim()).collect()
}

pub(crate) fn parse(line: &SpecLine) -> Result<Directive<'_>, SyntaxError> {
    let whole = Piece { text: &line.text, col: line.col };
    let (word, rest) = first_word(whole);
    match word.text {
        "let" => {
            let (lhs, expr) = split_once(rest, "=").ok_or_else(|| error("expected `let NAME = EXPR`", whole))?;
            Ok(Directive::Let { name: name(lhs)?, expr })
        }
        "tune" => {
            let (lhs, values) =
                split_once(rest, " in ").ok_or_else(|| error("expected `tune NAME in [v1, v2, ...]`", whole))?;
            let tuned = name(lhs)?;
            let items = inside(values, '[', ']')
                .ok_or_else(|| error("expected a list in brackets, e.g. `[128, 256, 512]`", values))?;
            let items = list(items);
            if items.len() > MAX_TUNE_VALUES {
                let message = format!(
                    "`tune {}` lists {} values: at most {MAX_TUNE_VALUES} (the optimizer tries each one)",
                    tuned.text,
                    items.len()
                );
                return Err(error(message, values));
            }
            Ok(Directive::Tune { name: tuned, values: items, list: values })
        }
        "check" => parse_check(rest),
        _ => parse_assignment(whole),
    }
}

fn parse_check(rest: Piece) -> Result<Directive, SyntaxError> {
    let (mut rtol, mut atol) = (None, None);
    let mut remaining = rest;
    while !remaining.text.is_empty() {
        let (item, after) = first_word(remaining);
        let (key, value) = split_once(item, "=").ok_or_else(|| error("expected `rtol=R` or `atol=A`", item))?;
        match key.text {
            "rtol" => rtol = Some(value),
            "atol" => atol = Some(value),
            _ => {
                return Err(error(format!("unknown tolerance `{}`: use `check rtol=R atol=A`", shown(key.text)), key));
            }
        }
        remaining = after;
    }
    if rtol.is_none() && atol.is_none() {
        return Err(error("`check` needs `rtol=R` and/or `atol=A`", rest));
    }
    Ok(Directive::Check { rtol, atol })
}

fn parse_assignment(whole: Piece) -> Result<Directive, SyntaxError> {
    let unknown = || {
        let (word, _) = first_word(whole);
        error(format!("unknown directive `{}`: a spec line is one of {DIRECTIVES}", shown(word.text)), word)
    };
    let (lhs, rhs) = split_once(whole, "=").ok_or_else(unknown)?;
    if !is_ident(lhs.text) {
        return Err(unknown());
    }
    let lhs = name(lhs)?;
    if rhs.text.is_empty() {
        return Err(error(format!("`{} =` needs a value after `=`", lhs.text), whole));
    }
    Ok(match lhs.text {
        "grid" | "block" => {
            let which = if lhs.text == "grid" { Dims::Grid } else { Dims::Block };
            let exprs = match inside(rhs, '(', ')') {
                Some(tuple) if split_top_level(tuple.text).len() > 1 => list(tuple),
                _ => vec![rhs],
            };
            if exprs.len() > 3 {
                return Err(error(
                    format!("`{}` has {} dimensions: write at most three, `(x, y, z)`", lhs.text, exprs.len()),
                    rhs,
                ));
            }
            Directive::Dims { which, exprs }
        }
        "smem" => Directive::Smem(rhs),
        "seed" => Directive::Seed(rhs),
        "instantiate" => Directive::Instantiate(rhs),
        "op" => Directive::Op(rhs),
        _ => {
            let (dir_word, buffer) = first_word(rhs);
            let dir = match dir_word.text {
                "in" => Dir::In,
                "out" => Dir::Out,
                "inout" => Dir::Inout,
                _ => {
                    return Ok(Directive::Scalar { param: lhs, value: rhs });
                }
            };
            parse_buffer(lhs, dir, buffer)?
        }
    })
}

fn parse_buffer<'a>(param: Piece<'a>, dir: Dir, rest: Piece<'a>) -> Result<Directive<'a>, SyntaxError> {
    let shape = "write `PARAM = in|out|inout TYPE[COUNT] [INIT]`, e.g. `x = in float[N] uniform(-1, 1)`";
    let open = rest.text.find('[').ok_or_else(|| error(format!("missing `[COUNT]`: {shape}"), rest))?;
    let ty = rest.sub(0, open).trim();
    let mut depth = 0;
    let close = rest.text[open..]
        .char_indices()
        .find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(open + i)
        })
        .ok_or_else(|| error(format!("missing `]`: {shape}"), rest))?;
    let count = rest.sub(open + 1, close - open - 1).trim();
    let tail = rest.sub(close + 1, rest.text.len() - close - 1).trim();
    let init = if tail.text.is_empty() {
        None
    } else {
        let name_len = tail.text.find('(').unwrap_or(tail.text.len());
        let name = tail.sub(0, name_len).trim();
        let args = tail.sub(name_len, tail.text.len() - name_len).trim();
        let args = if args.text.is_empty() {
            Vec::new()
        } else {
            list(inside(args, '(', ')').ok_or_else(|| {
                error(format!("expected `{}(...)` with its arguments in parentheses", shown(name.text)), args)
            })?)
        };
        Some(InitSyntax { name, args })
    };
    Ok(Directive::Buffer { param, dir, ty, count, init })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        let line = SpecLine { line: 0, col: 3, text: text.to_string() };
        let got = match parse(&line) {
            Ok(d) => format!("{d:?}"),
            Err(e) => format!("error {}..{}: {}", e.start, e.end, e.message),
        };
        assert_eq!(got, expected, "{text}");
    }

    #[test]
    fn parses_each_directive() {
        check(
            "let N = 1 << 24",
            r#"Let { name: Piece { text: "N", col: 7 }, expr: Piece { text: "1 << 24", col: 11 } }"#,
        );
        check(
            "grid = (ceil_div(N, B), 4)",
            r#"Dims { which: Grid, exprs: [Piece { text: "ceil_div(N, B)", col: 11 }, Piece { text: "4", col: 27 }] }"#,
        );
        check("block = (B)", r#"Dims { which: Block, exprs: [Piece { text: "(B)", col: 11 }] }"#);
        check(
            "tune B in []",
            r#"Tune { name: Piece { text: "B", col: 8 }, values: [], list: Piece { text: "[]", col: 13 } }"#,
        );
        check(
            "check rtol=1e-3 atol=0",
            r#"Check { rtol: Some(Piece { text: "1e-3", col: 14 }), atol: Some(Piece { text: "0", col: 24 }) }"#,
        );
        check(
            "x = in float[N] uniform(-2, 2)",
            r#"Buffer { param: Piece { text: "x", col: 3 }, dir: In, ty: Piece { text: "float", col: 10 }, count: Piece { text: "N", col: 16 }, init: Some(InitSyntax { name: Piece { text: "uniform", col: 19 }, args: [Piece { text: "-2", col: 27 }, Piece { text: "2", col: 31 }] }) }"#,
        );
        check("a = 2.0", r#"Scalar { param: Piece { text: "a", col: 3 }, value: Piece { text: "2.0", col: 7 } }"#);
        check("op = gemm M N K row", r#"Op(Piece { text: "gemm M N K row", col: 8 })"#);
    }

    #[test]
    fn reports_syntax_errors() {
        check(
            "launch x",
            "error 3..9: unknown directive `launch`: a spec line is one of let, tune, grid, block, smem, seed, check, instantiate, op, or PARAM = ...",
        );
        check("grid = (1, 2, 3, 4)", "error 10..22: `grid` has 4 dimensions: write at most three, `(x, y, z)`");
        check("check tol=1", "error 9..12: unknown tolerance `tol`: use `check rtol=R atol=A`");
        check(
            "x = in float N",
            "error 10..17: missing `[COUNT]`: write `PARAM = in|out|inout TYPE[COUNT] [INIT]`, e.g. `x = in float[N] uniform(-1, 1)`",
        );
        check("tune B in 1, 2", "error 13..17: expected a list in brackets, e.g. `[128, 256, 512]`");
    }
}
