//! FP64 work in a float kernel. The SASS says which lines run on the FP64 pipe
//! (`F2F.F64.F32`, `DMUL`, …); the source says why: a double literal, a
//! `double` local, a math call resolved to its double overload, or a cast.
//! A line whose cause is not visible in the source is left alone (the `sinf`
//! slow path uses `DMUL` on purpose), and so are functions with double parameters.

use super::finding;
use crate::locate::{lines_with, listing, sass_functions};
use crate::syntax::{Syntax, descendants, is_double_literal};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_sass::cost::is_fp64;
use kernelpro_sass::disasm::Instruction;
use kernelpro_source::{FnKind, span_of};
use std::collections::{BTreeMap, HashSet};
use tree_sitter::Node;

pub struct Fp64Promotion;

const NAME: Code = Code::Fp64Promotion;

/// Math functions whose unsuffixed name has a double overload.
const MATH: &[&str] = &[
    "sqrt", "rsqrt", "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "erf", "fabs", "floor", "ceil", "round", "trunc",
    "fmod", "fmin", "fmax", "fma", "hypot",
];

/// Why a line computes in double, with the node to underline.
enum Cause<'t> {
    Literal(Node<'t>),
    DoubleLocal(Node<'t>),
    MathCall(Node<'t>, String),
    DoubleType(Node<'t>),
}

impl StaticTool for Fp64Promotion {
    fn needs(&self) -> crate::Needs {
        crate::Needs::Sass
    }
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let (Some(sass), Some(syntax)) = (input.sass, Syntax::parse(input.text)) else {
            return Vec::new();
        };
        // 1-based line → (kernel, FP64 instructions), over every kernel that ran it.
        let mut lines: BTreeMap<u32, (String, Vec<&Instruction>)> = BTreeMap::new();
        for kernel in input.source.kernels() {
            for function in sass_functions(sass, &kernel.name) {
                for (line, hits) in lines_with(function, input.path, is_fp64) {
                    lines.entry(line).or_insert_with(|| (kernel.name.clone(), Vec::new())).1.extend(hits);
                }
            }
        }
        let mut findings = Vec::new();
        for (line, (kernel, hits)) in lines {
            let Some(function) = input.source.function_at_line(line.saturating_sub(1)) else {
                continue;
            };
            let genuine = function.params.iter().any(|p| p.base.contains("double"));
            if function.kind == FnKind::Host || genuine {
                continue;
            }
            let Some(body) = syntax.body(function) else {
                continue;
            };
            let Some(cause) = cause_on_line(&syntax, body, line - 1) else {
                continue;
            };
            let (node, message, guidance) = describe(&syntax, &cause);
            findings.push(
                finding(
                    NAME,
                    Severity::Warning,
                    span_of(node),
                    &kernel,
                    format!("FP64 in float kernel `{kernel}`: {message}"),
                )
                .with_evidence("sass", listing(&hits, 6))
                .with_evidence("fp64 instructions", hits.len())
                .with_guidance(guidance),
            );
        }
        findings
    }
}

/// The first visible cause of double arithmetic on a 0-based line, by priority.
fn cause_on_line<'t>(syntax: &Syntax, body: Node<'t>, line: u32) -> Option<Cause<'t>> {
    let doubles = double_locals(syntax, body);
    let on_line: Vec<Node> = descendants(body).into_iter().filter(|n| n.start_position().row as u32 == line).collect();
    let literal = on_line.iter().find(|n| n.kind() == "number_literal" && is_double_literal(syntax.text(**n)));
    let local = on_line.iter().find(|n| n.kind() == "identifier" && doubles.contains(syntax.text(**n)));
    let call = on_line.iter().find_map(|n| {
        let callee = (n.kind() == "call_expression").then(|| n.child_by_field_name("function")).flatten()?;
        let name = syntax.text(callee).trim_start_matches("std::");
        MATH.contains(&name).then(|| Cause::MathCall(*n, name.to_string()))
    });
    let double_type = on_line.iter().find(|n| n.kind() == "primitive_type" && syntax.text(**n) == "double");
    literal
        .map(|n| Cause::Literal(*n))
        .or_else(|| local.map(|n| Cause::DoubleLocal(*n)))
        .or(call)
        .or_else(|| double_type.map(|n| Cause::DoubleType(*n)))
}

/// Names declared with type `double` in the body.
fn double_locals(syntax: &Syntax, body: Node) -> HashSet<String> {
    let mut names = HashSet::new();
    for declaration in descendants(body).into_iter().filter(|n| n.kind() == "declaration") {
        if declaration.child_by_field_name("type").is_some_and(|t| syntax.text(t) == "double") {
            let mut cursor = declaration.walk();
            for declarator in declaration.children_by_field_name("declarator", &mut cursor) {
                let name = declarator.child_by_field_name("declarator").unwrap_or(declarator);
                if name.kind() == "identifier" {
                    names.insert(syntax.text(name).to_string());
                }
            }
        }
    }
    names
}

fn describe<'t>(syntax: &Syntax, cause: &Cause<'t>) -> (Node<'t>, String, String) {
    match cause {
        Cause::Literal(n) => {
            let text = syntax.text(*n);
            (
                *n,
                format!("the double literal `{text}` promotes this expression to double"),
                format!("Write `{text}f` so the expression stays in float."),
            )
        }
        Cause::DoubleLocal(n) => {
            let text = syntax.text(*n);
            let accumulates = n.parent().is_some_and(|p| {
                p.kind() == "assignment_expression"
                    && p.child_by_field_name("left") == Some(*n)
                    && syntax.operator(p).is_some_and(|op| op != "=")
            });
            let what = if accumulates {
                format!("`{text}` is a `double` accumulator: each update converts to double and runs on the FP64 pipe")
            } else {
                format!("`{text}` is declared `double`")
            };
            (*n, what, format!("Declare `{text}` as `float` unless it really needs double precision."))
        }
        Cause::MathCall(n, name) => (
            *n,
            format!("`{name}` is called on a double argument and runs the double version"),
            format!("Call `{name}f` and keep its argument float (check for double literals inside it)."),
        ),
        Cause::DoubleType(n) => {
            (*n, "a `double` conversion forces double arithmetic".to_string(), "Use `float` here.".to_string())
        }
    }
}
