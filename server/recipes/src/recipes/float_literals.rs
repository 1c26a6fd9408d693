//! FP64 promotion: double literals get an `f` suffix and double math calls
//! become their float versions, unless the kernel really works in double.

use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::descendants;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;

pub struct FloatLiterals;

/// Double-precision math functions with a float twin named `NAMEf`.
const MATH: &[&str] = &[
    "sqrt", "rsqrt", "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "fabs", "floor", "ceil", "round", "trunc", "fmin",
    "fmax", "fmod", "hypot", "erf", "erfc", "fma", "sincos",
];

/// `2.0`, `1e-3`, `.5` without a suffix; not hex, not integers.
fn is_double_literal(lit: &str) -> bool {
    let decimal = !lit.starts_with("0x") && !lit.starts_with("0X");
    let floating = lit.contains('.') || lit.contains(['e', 'E']);
    let suffixed = lit.ends_with(['f', 'F', 'l', 'L']);
    decimal && floating && !suffixed
}

impl Recipe for FloatLiterals {
    fn name(&self) -> &'static str {
        "FloatLiterals"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::Fp64Promotion, Code::FP64Math]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let nodes = descendants(k.definition());
        // A double parameter or local means the kernel computes in double on purpose.
        if nodes.iter().any(|n| n.kind() == "primitive_type" && k.text_of(*n) == "double") {
            return Vec::new();
        }
        let mut edits = Edits::default();
        let (mut literals, mut calls) = (0, 0);
        for n in descendants(k.body()) {
            match n.kind() {
                "number_literal" if is_double_literal(k.text_of(n)) => {
                    edits.insert(n.end_byte(), "f");
                    literals += 1;
                }
                "call_expression" => {
                    let Some(f) = n.child_by_field_name("function").filter(|f| f.kind() == "identifier") else {
                        continue;
                    };
                    if MATH.contains(&k.text_of(f)) {
                        edits.insert(f.end_byte(), "f");
                        calls += 1;
                    }
                }
                _ => {}
            }
        }
        if edits.is_empty() {
            return Vec::new();
        }
        let note = format!("float literals ({literals}) and float math calls ({calls})");
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
