//! The integer expression language of spec lines: i64 literals, names,
//! `<< >> + - * / %`, parentheses and `ceil_div`, `min`, `max`, all checked.

use std::collections::HashMap;

/// Why an expression could not be evaluated, with the byte range (relative to
/// the expression text) of the token at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub kind: ExprErrorKind,
    pub message: String,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprErrorKind {
    Syntax,
    UnknownName,
    DivisionByZero,
    Overflow,
}

/// Names visible to an expression, in definition order (for "did you mean" lists).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    values: HashMap<String, i64>,
    order: Vec<String>,
}

impl Scope {
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).copied()
    }
    pub fn set(&mut self, name: &str, value: i64) {
        if self.values.insert(name.to_string(), value).is_none() {
            self.order.push(name.to_string());
        }
    }
    pub fn contains(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }
    /// Every name with its value, in definition order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.order.iter().map(|n| (n.as_str(), self.values[n]))
    }
    fn known(&self) -> String {
        if self.order.is_empty() {
            "no names are defined yet".to_string()
        } else {
            format!("defined names: {}", self.order.join(", "))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Int(i64),
    Name(&'a str),
    Op(&'static str),
    End,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    tok: Tok<'a>,
    tok_start: usize,
    scope: &'a Scope,
    /// Open parentheses, calls and signs around the current token.
    depth: usize,
}

/// How deep parentheses, `ceil_div`/`min`/`max` calls and unary signs may nest.
/// The parser recurses once per level: a bound keeps a 2 MiB stack safe from a
/// spec line of 100,000 parentheses, and no real size expression comes close.
pub const MAX_NESTING: usize = 64;
/// The longest name an expression may use (longer ones are a mistake or an attack).
pub const MAX_NAME_LEN: usize = 256;

/// `text` for a message, cut to 40 characters.
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

const OPS: [&str; 10] = ["<<", ">>", "+", "-", "*", "/", "%", "(", ")", ","];

fn err(kind: ExprErrorKind, message: impl Into<String>, start: usize, end: usize) -> ExprError {
    ExprError { kind, message: message.into(), start, end }
}

impl<'a> Parser<'a> {
    fn advance(&mut self) -> Result<(), ExprError> {
        let bytes = self.src.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        self.tok_start = self.pos;
        if self.pos >= bytes.len() {
            self.tok = Tok::End;
            return Ok(());
        }
        let rest = &self.src[self.pos..];
        let c = bytes[self.pos];
        if c.is_ascii_digit() {
            let len =
                rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')).unwrap_or(rest.len());
            let text = &rest[..len];
            let end = self.pos + len;
            self.tok = Tok::Int(parse_int(text).ok_or_else(|| {
                let hint = if text.contains(['.', 'e', 'E']) && !text.starts_with("0x") {
                    "only integers are allowed here"
                } else {
                    "write a decimal or 0x-hex integer that fits in 64 bits"
                };
                err(ExprErrorKind::Syntax, format!("`{}` is not an integer: {hint}", shown(text)), self.pos, end)
            })?);
            self.pos = end;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let len = rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).unwrap_or(rest.len());
            if len > MAX_NAME_LEN {
                return Err(err(
                    ExprErrorKind::Syntax,
                    format!("`{}` is {len} characters long: names have at most {MAX_NAME_LEN}", shown(&rest[..len])),
                    self.pos,
                    self.pos + len,
                ));
            }
            self.tok = Tok::Name(&rest[..len]);
            self.pos += len;
        } else if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            self.tok = Tok::Op(op);
            self.pos += op.len();
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            return Err(err(
                ExprErrorKind::Syntax,
                format!(
                    "unexpected `{ch}`: expressions use integers, names, `<< >> + - * / %`, parentheses, ceil_div, min and max"
                ),
                self.pos,
                self.pos + ch.len_utf8(),
            ));
        }
        Ok(())
    }

    fn tok_end(&self) -> usize {
        self.pos
    }

    fn expect(&mut self, op: &'static str, what: &str) -> Result<(), ExprError> {
        if self.tok == Tok::Op(op) {
            return self.advance();
        }
        let (s, e) = self.here();
        Err(err(ExprErrorKind::Syntax, format!("expected `{op}` {what}"), s, e))
    }

    /// The range of the current token; an empty range at the end gets one column so it shows.
    fn here(&self) -> (usize, usize) {
        if self.tok == Tok::End { (self.src.len(), self.src.len()) } else { (self.tok_start, self.tok_end()) }
    }

    /// Runs `inner` one nesting level deeper, or reports the level past [`MAX_NESTING`] at the current token.
    fn nested(&mut self, inner: impl FnOnce(&mut Self) -> Result<i64, ExprError>) -> Result<i64, ExprError> {
        if self.depth >= MAX_NESTING {
            let (s, e) = self.here();
            return Err(err(
                ExprErrorKind::Syntax,
                format!(
                    "the expression nests deeper than {MAX_NESTING} levels of parentheses, calls or signs: simplify it, or name parts with `let`"
                ),
                s,
                e,
            ));
        }
        self.depth += 1;
        let v = inner(self);
        self.depth -= 1;
        v
    }

    fn shift(&mut self) -> Result<i64, ExprError> {
        let mut lhs = self.additive()?;
        while let Tok::Op(op @ ("<<" | ">>")) = self.tok {
            let (os, oe) = self.here();
            self.advance()?;
            let rhs = self.additive()?;
            let amount = u32::try_from(rhs).ok().filter(|a| *a < 63);
            lhs = match (op, amount) {
                ("<<", Some(a)) => lhs.checked_mul(1i64 << a),
                (">>", Some(a)) => Some(lhs >> a),
                _ => None,
            }
            .ok_or_else(|| {
                err(ExprErrorKind::Overflow, format!("`{lhs} {op} {rhs}` overflows a 64-bit integer"), os, oe)
            })?;
        }
        Ok(lhs)
    }

    fn additive(&mut self) -> Result<i64, ExprError> {
        let mut lhs = self.multiplicative()?;
        while let Tok::Op(op @ ("+" | "-")) = self.tok {
            let (os, oe) = self.here();
            self.advance()?;
            let rhs = self.multiplicative()?;
            let v = if op == "+" { lhs.checked_add(rhs) } else { lhs.checked_sub(rhs) };
            lhs = v.ok_or_else(|| {
                err(ExprErrorKind::Overflow, format!("`{lhs} {op} {rhs}` overflows a 64-bit integer"), os, oe)
            })?;
        }
        Ok(lhs)
    }

    fn multiplicative(&mut self) -> Result<i64, ExprError> {
        let mut lhs = self.unary()?;
        while let Tok::Op(op @ ("*" | "/" | "%")) = self.tok {
            let (os, oe) = self.here();
            self.advance()?;
            let (rs, _) = self.here();
            let rhs = self.unary()?;
            if op != "*" && rhs == 0 {
                return Err(err(
                    ExprErrorKind::DivisionByZero,
                    format!("division by zero: the right side of `{op}` is 0"),
                    rs,
                    self.tok_start.max(rs),
                ));
            }
            let v = match op {
                "*" => lhs.checked_mul(rhs),
                "/" => lhs.checked_div(rhs),
                _ => lhs.checked_rem(rhs),
            };
            lhs = v.ok_or_else(|| {
                err(ExprErrorKind::Overflow, format!("`{lhs} {op} {rhs}` overflows a 64-bit integer"), os, oe)
            })?;
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<i64, ExprError> {
        if self.tok == Tok::Op("-") {
            let (s, e) = self.here();
            return self.nested(|p| {
                p.advance()?;
                let v = p.unary()?;
                v.checked_neg().ok_or_else(|| err(ExprErrorKind::Overflow, "negation overflows a 64-bit integer", s, e))
            });
        }
        if self.tok == Tok::Op("+") {
            return self.nested(|p| {
                p.advance()?;
                p.unary()
            });
        }
        self.primary()
    }

    /// `ceil_div(a, b)`, `min(a, b)`, `max(a, b)` after the name; `s..e` is the name.
    fn call(&mut self, name: &str, s: usize, e: usize) -> Result<i64, ExprError> {
        self.advance()?;
        self.expect("(", &format!("after `{name}`: write {name}(a, b)"))?;
        let a = self.shift()?;
        self.expect(",", &format!("between the two arguments of {name}(a, b)"))?;
        let (bs, _) = self.here();
        let b = self.shift()?;
        let be = self.tok_start.max(bs);
        self.expect(")", &format!("after the second argument of {name}(a, b)"))?;
        match name {
            "min" => Ok(a.min(b)),
            "max" => Ok(a.max(b)),
            _ => {
                if b == 0 {
                    return Err(err(
                        ExprErrorKind::DivisionByZero,
                        "division by zero: the second argument of ceil_div is 0",
                        bs,
                        be,
                    ));
                }
                let q = a
                    .checked_div(b)
                    .ok_or_else(|| err(ExprErrorKind::Overflow, "ceil_div overflows a 64-bit integer", s, e))?;
                let r = a % b;
                Ok(if r != 0 && ((r > 0) == (b > 0)) { q + 1 } else { q })
            }
        }
    }

    fn primary(&mut self) -> Result<i64, ExprError> {
        let (s, e) = self.here();
        match self.tok {
            Tok::Int(v) => {
                self.advance()?;
                Ok(v)
            }
            Tok::Op("(") => self.nested(|p| {
                p.advance()?;
                let v = p.shift()?;
                p.expect(")", "to close the parenthesis")?;
                Ok(v)
            }),
            Tok::Name(name @ ("ceil_div" | "min" | "max")) => self.nested(|p| p.call(name, s, e)),
            Tok::Name(name) => {
                self.advance()?;
                self.scope.get(name).ok_or_else(|| {
                    err(
                        ExprErrorKind::UnknownName,
                        format!(
                            "unknown name `{name}`: define it with `let {name} = ...` above this line ({})",
                            self.scope.known()
                        ),
                        s,
                        e,
                    )
                })
            }
            Tok::End => {
                Err(err(ExprErrorKind::Syntax, "expression ends too early: expected a number, a name or `(`", s, e))
            }
            Tok::Op(op) => {
                Err(err(ExprErrorKind::Syntax, format!("unexpected `{op}`: expected a number, a name or `(`"), s, e))
            }
        }
    }
}

/// Parses a decimal or `0x` hex integer, allowing `_` separators.
fn parse_int(text: &str) -> Option<i64> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    match clean.strip_prefix("0x").or_else(|| clean.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => clean.parse().ok(),
    }
}

/// Evaluates `src` with the names in `scope`.
pub fn eval(src: &str, scope: &Scope) -> Result<i64, ExprError> {
    let mut p = Parser { src, pos: 0, tok: Tok::End, tok_start: 0, scope, depth: 0 };
    p.advance()?;
    let v = p.shift()?;
    if p.tok != Tok::End {
        let (s, _) = p.here();
        return Err(err(
            ExprErrorKind::Syntax,
            "unexpected text after the end of the expression",
            s,
            src.trim_end().len().max(s + 1),
        ));
    }
    Ok(v)
}

/// A float literal such as `2.0`, `-1e-3`, `0.5f`; `None` when `src` is not one.
pub fn float_literal(src: &str) -> Option<f64> {
    let t = src.trim();
    let t = t.strip_suffix(['f', 'F']).unwrap_or(t);
    if !t.contains(['.', 'e', 'E']) || t.starts_with("0x") {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A number for `uniform(lo, hi)`/`fill(v)`: a float literal or an integer expression.
pub fn number(src: &str, scope: &Scope) -> Result<f64, ExprError> {
    match float_literal(src) {
        Some(v) => Ok(v),
        None => eval(src, scope).map(|v| v as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str, expected: Result<i64, (&str, &str)>) {
        let mut scope = Scope::default();
        scope.set("N", 1 << 24);
        scope.set("B", 256);
        let got = eval(src, &scope).map_err(|e| (e.message.clone(), src[e.start..e.end.min(src.len())].to_string()));
        let got = got.as_ref().map_err(|(m, t)| (m.as_str(), t.as_str())).copied();
        assert_eq!(got, expected, "{src}");
    }

    #[test]
    fn evaluates_integer_expressions() {
        check("1 << 24", Ok(16777216));
        check("ceil_div(N, B)", Ok(65536));
        check("ceil_div(1000, 256)", Ok(4));
        check("ceil_div(-7, 2)", Ok(-3));
        check("2 + 3 * 4 - 10 / 3 % 2", Ok(13));
        check("(2 + 3) * 4", Ok(20));
        check("1 << 2 + 1", Ok(8));
        check("-N >> 4", Ok(-1048576));
        check("min(N, B) + max(3, 0x10)", Ok(272));
        check("1_000_000", Ok(1_000_000));
    }

    #[test]
    fn reports_the_token_at_fault() {
        check("N / 0", Err(("division by zero: the right side of `/` is 0", "0")));
        check("ceil_div(N, B - 256)", Err(("division by zero: the second argument of ceil_div is 0", "B - 256")));
        check("N * N * N * N", Err(("`281474976710656 * 16777216` overflows a 64-bit integer", "*")));
        check("1 << 64", Err(("`1 << 64` overflows a 64-bit integer", "<<")));
        check(
            "9223372036854775808",
            Err((
                "`9223372036854775808` is not an integer: write a decimal or 0x-hex integer that fits in 64 bits",
                "9223372036854775808",
            )),
        );
        check(
            "N + M",
            Err(("unknown name `M`: define it with `let M = ...` above this line (defined names: N, B)", "M")),
        );
        check("N +", Err(("expression ends too early: expected a number, a name or `(`", "")));
        check("(N", Err(("expected `)` to close the parenthesis", "")));
        check(
            "N $ 2",
            Err((
                "unexpected `$`: expressions use integers, names, `<< >> + - * / %`, parentheses, ceil_div, min and max",
                "$",
            )),
        );
        check("2.5 * N", Err(("`2.5` is not an integer: only integers are allowed here", "2.5")));
        check("N N", Err(("unexpected text after the end of the expression", "N")));
        check("min(N)", Err(("expected `,` between the two arguments of min(a, b)", ")")));
    }

    #[test]
    fn nesting_is_bounded_with_a_message() {
        let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        check(&nested(MAX_NESTING), Ok(1));
        check(&format!("{}2{}", "min(1 + ".repeat(MAX_NESTING), ", 5)".repeat(MAX_NESTING)), Ok(5));
        let message = "the expression nests deeper than 64 levels of parentheses, calls or signs: simplify it, or name parts with `let`";
        check(&nested(MAX_NESTING + 1), Err((message, "(")));
        check(&format!("{}N", "-".repeat(MAX_NESTING + 1)), Err((message, "-")));
        check(&format!("{}1{}", "max(0, ".repeat(MAX_NESTING + 1), ")".repeat(MAX_NESTING + 1)), Err((message, "max")));
        // 100,000 levels of each kind on a tokio worker's stack: an error, not an overflow.
        for text in [nested(100_000), "-".repeat(100_000) + "1", "+".repeat(100_000) + "1", "ceil_div(".repeat(100_000)]
        {
            let got = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || eval(&text, &Scope::default()))
                .unwrap()
                .join()
                .expect("no stack overflow");
            assert_eq!(got.map_err(|e| e.message), Err(message.to_string()));
        }
    }

    #[test]
    fn long_names_and_numbers_are_refused_briefly() {
        let name = "n".repeat(MAX_NAME_LEN + 1);
        check(
            &format!("1 + {name}"),
            Err(("`nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn…` is 257 characters long: names have at most 256", &name)),
        );
        let digits = "9".repeat(10_000);
        check(
            &digits,
            Err((
                "`9999999999999999999999999999999999999999…` is not an integer: write a decimal or 0x-hex integer that fits in 64 bits",
                &digits,
            )),
        );
    }

    #[test]
    fn reads_float_literals() {
        assert_eq!(float_literal("2.0"), Some(2.0));
        assert_eq!(float_literal("-1e-3"), Some(-0.001));
        assert_eq!(float_literal("0.5f"), Some(0.5));
        assert_eq!(float_literal("2"), None);
        assert_eq!(float_literal("N"), None);
    }
}
