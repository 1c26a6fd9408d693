//! A finding promises a rewrite: each structural finding code (those with a quick fix in
//! `kernelpro_model::Code::fix_title`) is answered by the structural recipes whose `answers()`
//! list it ([`promised`]: the recipes' `answers` are the one definition of the mapping). When
//! none of them applies to a kernel, [`why_not`] says which fact of the kernel blocked each, in
//! words: the reason a recipe gives through [`Recipe::attempt`](crate::Recipe::attempt).

use crate::kernel::Kernel;
use crate::syntax::{descendants, statements};
use crate::{Tier, all};
use kernelpro_model::Code;
use kernelpro_source::kernel_model::{AccessKind, Atom, Dim, Space};
use serde::Serialize;
use tree_sitter::Node;

/// Why a recipe did not rewrite a kernel it was asked to, in words a user can act on
/// ("the loop-carried value `mean` is updated by a recurrence with no known combine").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{reason}")]
pub struct NotApplicable {
    pub reason: String,
}

impl NotApplicable {
    pub fn new(reason: impl Into<String>) -> NotApplicable {
        NotApplicable { reason: reason.into() }
    }
}

/// One promised rewrite that did not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyNot {
    /// The finding whose promise it is.
    pub code: Code,
    pub recipe: &'static str,
    pub reason: String,
}

impl std::fmt::Display for WhyNot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} did not apply because {}", self.recipe, self.reason)
    }
}

/// `a`, `a and b`, `a, b and c`.
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The reasons in words, one line per finding code, the recipes that share a reason together:
/// "RowWalk (Row walk) promises BlockUnits and WarpUnits, which did not apply because …".
pub fn explain(why: &[WhyNot]) -> Vec<String> {
    let mut codes: Vec<Code> = Vec::new();
    for w in why {
        if !codes.contains(&w.code) {
            codes.push(w.code);
        }
    }
    codes
        .into_iter()
        .map(|code| {
            let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
            for w in why.iter().filter(|w| w.code == code) {
                match reasons.iter_mut().find(|(r, _)| *r == w.reason) {
                    Some((_, names)) => names.push(w.recipe),
                    None => reasons.push((&w.reason, vec![w.recipe])),
                }
            }
            let parts: Vec<String> = reasons
                .iter()
                .map(|(reason, names)| format!("{} did not apply because {reason}", listed(names)))
                .collect();
            format!("{code} ({}) promises rewrites, and none applied: {}", code.title(), parts.join("; "))
        })
        .collect()
}

/// Where a finding's promise stands for one kernel: the promised rewrites that apply, and why
/// each other one does not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PromiseStatus {
    pub applies: Vec<&'static str>,
    pub blocked: Vec<WhyNot>,
}

/// The structural rewrites that answer finding `code`, in the order the proposer tries them
/// (empty for a code that promises no rewrite).
pub fn promised(code: Code) -> Vec<&'static str> {
    all()
        .into_iter()
        .filter(|r| r.tier() == Tier::Structural && r.answers().contains(&code))
        .map(|r| r.name())
        .collect()
}

/// Which of finding `code`'s promised rewrites apply to `kernel` in `text`, and why the others do not.
pub fn promise_status(text: &str, kernel: &str, code: Code) -> PromiseStatus {
    let mut out = PromiseStatus::default();
    for r in all().into_iter().filter(|r| r.tier() == Tier::Structural && r.answers().contains(&code)) {
        match r.attempt(text, kernel) {
            Ok(_) => out.applies.push(r.name()),
            Err(e) => out.blocked.push(WhyNot { code, recipe: r.name(), reason: e.reason }),
        }
    }
    out
}

/// For each of `codes` (a kernel's findings) that promises rewrites none of which applies: why
/// each promised rewrite did not apply. A code whose promise some rewrite keeps says nothing.
pub fn why_not(text: &str, kernel: &str, codes: &[Code]) -> Vec<WhyNot> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for &code in codes {
        if seen.contains(&code) || code.fix_title().is_none() {
            continue;
        }
        seen.push(code);
        let status = promise_status(text, kernel, code);
        if status.applies.is_empty() {
            out.extend(status.blocked);
        }
    }
    out
}

/// The reason `recipe` gives when it finds nothing to rewrite in `kernel`: the first fact of the
/// kernel (its model and its syntax) that blocks a rewrite of its kind, else what it looks for.
pub(crate) fn reason(name: &str, answers: &[Code], text: &str, kernel: &str) -> NotApplicable {
    let Some(k) = Kernel::find(text, kernel) else {
        return NotApplicable::new(format!("`{kernel}` is not a kernel with a body in this file"));
    };
    let rows = ["WarpUnits", "BlockUnits", "ClusterUnits", "HoistRowWork", "ColumnUnits", "WarpScan"];
    if rows.contains(&name)
        && let Some(why) = row_loop_blocker(&k)
    {
        return NotApplicable::new(why);
    }
    if ["BlockReduce", "PrivateHistogram"].contains(&name)
        && let Some(why) = atomic_blocker(&k, name)
    {
        return NotApplicable::new(why);
    }
    if answers.contains(&Code::UncoalescedAccess)
        && let Some(why) = coalescing_blocker(&k)
    {
        return NotApplicable::new(why);
    }
    let needs = match name {
        "WarpUnits" | "BlockUnits" | "ClusterUnits" => {
            "a thread per unit (a row, an output) guarded by its bound and walking a loop over the unit's elements"
        }
        "HoistRowWork" => "a thread per element of a 2D grid whose first statements depend on the row alone",
        "ColumnUnits" => "a thread per unit whose loop reads neighbouring units' elements side by side",
        "WarpScan" => "a thread per row walking it with a running value stored at every element",
        "TiledContraction" => "a thread per output element with a dot-product loop over a shared dimension",
        "TiledTranspose" => "a thread per element copying with its load and store running along different indices",
        "StencilTile" => "a 1D stencil: each thread reading its neighbours at constant offsets",
        "BlockReduce" => "one atomicAdd per unit into one address",
        "PrivateHistogram" => "one atomicAdd per unit into a bin chosen from the data, with the bin count known",
        "ShuffleTree" | "SegmentWarps" => "an interleaved shared-memory tree reduction per block",
        "GridStrideMap" => "one element per thread with no long loop",
        _ => "its pattern",
    };
    let spec = if k.launch().is_none() {
        " (the kernel has no resolvable launch spec, `// kernelpro:` lines, which the rewrite sizes itself from)"
    } else {
        ""
    };
    NotApplicable::new(format!("the kernel's threads were not read as {needs}{spec}"))
}

/// The kernel's outermost loops.
fn top_loops<'t>(k: &'t Kernel) -> Vec<Node<'t>> {
    let is_loop = |n: &Node| matches!(n.kind(), "for_statement" | "while_statement" | "do_statement");
    descendants(k.body())
        .into_iter()
        .filter(|n| is_loop(n) && std::iter::successors(n.parent(), |p| p.parent()).all(|p| !is_loop(&p)))
        .collect()
}

fn line_of(k: &Kernel, n: Node) -> usize {
    let _ = k;
    n.start_position().row + 1
}

/// Why the kernel's row loop cannot be split across a warp's lanes, if the syntax says.
fn row_loop_blocker(k: &Kernel) -> Option<String> {
    let loops = top_loops(k);
    if loops.is_empty() {
        return Some(format!(
            "no thread of `{}` walks a loop: each handles one element, so there is no row for a warp's lanes to split",
            k.func.name
        ));
    }
    for l in &loops {
        if let Some(why) = recurrence(k, *l) {
            return Some(why);
        }
    }
    for l in &loops {
        let inside = descendants(*l);
        if let Some(exit) =
            inside.iter().find(|d| matches!(d.kind(), "break_statement" | "return_statement" | "goto_statement"))
        {
            return Some(format!(
                "the loop on line {} can end early (`{}` on line {}), so its iterations cannot be split across lanes",
                line_of(k, *l),
                k.text_of(*exit).trim_end_matches(';'),
                line_of(k, *exit)
            ));
        }
        if let Some(b) =
            inside.iter().find(|d| d.kind() == "call_expression" && k.text_of(**d).starts_with("__syncthreads"))
        {
            return Some(format!("the loop on line {} holds a barrier (line {})", line_of(k, *l), line_of(k, *b)));
        }
        if let Some(p) = inside.iter().find(|d| {
            d.kind() == "update_expression"
                && d.child_by_field_name("argument")
                    .is_some_and(|a| a.kind() == "identifier" && is_pointer(k, k.text_of(a)))
        }) {
            return Some(format!(
                "the loop on line {} walks its row through a pointer (`{}`), not an index the lanes could split",
                line_of(k, *l),
                k.text_of(*p)
            ));
        }
    }
    None
}

/// Whether `name` is a pointer parameter or a local declared as a pointer.
fn is_pointer(k: &Kernel, name: &str) -> bool {
    k.param(name).is_some_and(|p| p.pointer)
        || descendants(k.body()).iter().any(|d| {
            d.kind() == "pointer_declarator"
                && d.child_by_field_name("declarator").is_some_and(|i| k.text_of(i) == name)
        })
}

/// Locals of the kernel declared outside `l` (values a loop may carry).
fn outer_locals(k: &Kernel, l: Node) -> Vec<String> {
    let mut out = Vec::new();
    for d in descendants(k.body()) {
        if d.start_byte() >= l.start_byte() && d.end_byte() <= l.end_byte() {
            continue;
        }
        if d.kind() == "declaration" {
            let mut c = d.walk();
            for decl in d.children_by_field_name("declarator", &mut c) {
                let id = match decl.kind() {
                    "identifier" => Some(decl),
                    "init_declarator" => decl.child_by_field_name("declarator").filter(|i| i.kind() == "identifier"),
                    _ => None,
                };
                if let Some(id) = id {
                    out.push(k.text_of(id).to_string());
                }
            }
        }
    }
    out
}

/// `n` without the parentheses around it.
fn strip_parens(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" {
        let Some(inner) = n.named_child(0) else { break };
        n = inner;
    }
    n
}

fn mentions(k: &Kernel, n: Node, name: &str) -> bool {
    descendants(n).iter().any(|d| d.kind() == "identifier" && k.text_of(*d) == name)
}

/// A loop-carried value of `l` updated by a recurrence with no known combine (a sum, product,
/// min/max, an arg-min/max's select, a count), as a reason.
fn recurrence(k: &Kernel, l: Node) -> Option<String> {
    let carried = outer_locals(k, l);
    for d in descendants(l) {
        let (target, op, right) = match d.kind() {
            "assignment_expression" => (
                d.child_by_field_name("left")?,
                d.child_by_field_name("operator").map(|o| k.text_of(o)).unwrap_or("="),
                d.child_by_field_name("right")?,
            ),
            _ => continue,
        };
        if target.kind() != "identifier" {
            continue;
        }
        let v = k.text_of(target);
        if !carried.iter().any(|c| c == v) {
            continue;
        }
        // `v` and the loop's locals computed from it (`delta = x - mean`).
        let tied = tied_to(k, l, v);
        if !tied.iter().any(|t| mentions(k, right, t)) {
            continue;
        }
        let known = match op {
            // `v += e` with `e` free of `v`: handled above (`mentions` is true here, so not).
            "+=" | "-=" | "*=" | "|=" | "&=" | "^=" => false,
            "=" => known_combine(k, right, v, &tied),
            _ => false,
        };
        if !known {
            return Some(format!(
                "the loop-carried value `{v}` is updated by a recurrence with no known combine (`{}` on line {})",
                k.text_of(d),
                line_of(k, d)
            ));
        }
    }
    None
}

/// `v` and the locals of loop `l` whose values derive from it, to a fixpoint.
fn tied_to(k: &Kernel, l: Node, v: &str) -> Vec<String> {
    let mut tied = vec![v.to_string()];
    loop {
        let before = tied.len();
        for d in descendants(l) {
            let (name, value) = match d.kind() {
                "init_declarator" => (d.child_by_field_name("declarator"), d.child_by_field_name("value")),
                "assignment_expression" => (d.child_by_field_name("left"), d.child_by_field_name("right")),
                _ => continue,
            };
            let (Some(name), Some(value)) = (name, value) else { continue };
            let name = k.text_of(name);
            if name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !tied.iter().any(|t| t == name)
                && tied.iter().any(|t| mentions(k, value, t))
            {
                tied.push(name.to_string());
            }
        }
        if tied.len() == before {
            return tied;
        }
    }
}

/// `v OP e`, `e OP v` (OP one of `+ * & | ^ -` with `v` first for `-`), `max(v, e)` and its
/// spellings, `c ? e : v` and `c ? v : e` with `e` free of `v`.
fn known_combine(k: &Kernel, right: Node, v: &str, tied: &[String]) -> bool {
    let right = strip_parens(right);
    let free = |n: Option<Node>| n.is_some_and(|n| !tied.iter().any(|t| mentions(k, n, t)));
    let is_v = |n: Option<Node>| n.is_some_and(|n| k.text_of(strip_parens(n)) == v);
    match right.kind() {
        "binary_expression" => {
            let op = right.child_by_field_name("operator").map(|o| k.text_of(o)).unwrap_or("");
            let (a, b) = (right.child_by_field_name("left"), right.child_by_field_name("right"));
            match op {
                "+" | "*" | "&" | "|" | "^" | "&&" | "||" => (is_v(a) && free(b)) || (is_v(b) && free(a)),
                "-" => is_v(a) && free(b),
                _ => false,
            }
        }
        "call_expression" => {
            let f = right.child_by_field_name("function").map(|f| k.text_of(f)).unwrap_or("");
            let args = right.child_by_field_name("arguments").map(statements).unwrap_or_default();
            ["max", "min", "fmaxf", "fminf", "fmax", "fmin", "maxf", "minf", "__hmax", "__hmin"].contains(&f)
                && args.len() == 2
                && ((is_v(Some(args[0])) && free(Some(args[1]))) || (is_v(Some(args[1])) && free(Some(args[0]))))
        }
        "conditional_expression" => {
            let (a, b) = (right.child_by_field_name("consequence"), right.child_by_field_name("alternative"));
            (is_v(a) && free(b)) || (is_v(b) && free(a))
        }
        _ => false,
    }
}

/// Why an atomic kernel's block-level rewrites do not apply, from the model's atomics.
fn atomic_blocker(k: &Kernel, recipe: &str) -> Option<String> {
    let m = k.model()?;
    let atomics: Vec<_> = m.accesses.iter().filter(|a| a.is_atomic() && a.space == Space::Global).collect();
    let Some(a) = atomics.first() else {
        return Some(format!("`{}` has no global atomic to combine per block", k.func.name));
    };
    if let AccessKind::Atomic(f) = &a.kind
        && f != "atomicAdd"
    {
        return Some(format!(
            "the atomic on line {} is `{f}`; only atomicAdd's partial sums are combined per block",
            a.line() + 1
        ));
    }
    if recipe == "BlockReduce" && a.is_irregular() {
        return Some(format!(
            "the atomic `{}` on line {} picks its address from the data, so threads do not share one address",
            a.text,
            a.line() + 1
        ));
    }
    if recipe == "BlockReduce" && a.index.atoms().any(|x| x.lane_varying()) {
        return Some(format!(
            "the atomic `{}` on line {} goes to a different address for each thread",
            a.text,
            a.line() + 1
        ));
    }
    if recipe == "PrivateHistogram" && !a.is_irregular() {
        return Some(format!("the atomic `{}` on line {} does not pick a bin from the data", a.text, a.line() + 1));
    }
    None
}

/// Why the accesses cannot be made coalesced by the promised rewrites, from the model: an access
/// whose fastest-moving index comes from `threadIdx.y` while the warp's lanes run along `threadIdx.x`.
fn coalescing_blocker(k: &Kernel) -> Option<String> {
    let m = k.model()?;
    for a in m.accesses.iter().filter(|a| a.space == Space::Global && !a.is_irregular()) {
        let x = a.lane_coefficient();
        let y = a.index.coefficient(&Atom::Tid(Dim::Y));
        if x.as_constant().is_none_or(|c| c.abs() != 1) && y.as_constant() == Some(1) {
            let what = if a.is_read() { "load" } else { "store" };
            return Some(format!(
                "the {what} `{}` on line {} has its fastest index from threadIdx.y, while a warp's lanes differ in threadIdx.x",
                a.text,
                a.line() + 1
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one mapping: every finding code with a quick fix promises at least one structural
    /// rewrite, and the static codes that structural rewrites answer are exactly these (those
    /// without a quick fix have a better micro or plain rewrite as their answer).
    #[test]
    fn every_structural_finding_promises_a_rewrite() {
        for c in Code::all() {
            if c.fix_title().is_some() {
                assert!(!promised(c).is_empty(), "{c} has a quick fix but no structural rewrite answers it");
            }
        }
        let static_promising: Vec<(Code, bool)> = Code::all()
            .filter(|c| c.origin() == kernelpro_model::Origin::Static && !promised(*c).is_empty())
            .map(|c| (c, c.fix_title().is_some()))
            .collect();
        assert_eq!(
            static_promising,
            [
                (Code::Fp64Promotion, false),
                (Code::SharedBankConflict, false),
                (Code::UncoalescedAccess, true),
                (Code::RowWalk, true),
                (Code::AtomicContention, true),
                (Code::DivergentBranch, true),
                (Code::MissedReuse, true),
            ]
        );
        assert_eq!(promised(Code::RowWalk)[..2], ["HoistRowWork", "BlockUnits"]);
        assert!(promised(Code::RowWalk).contains(&"WarpUnits"));
        assert!(promised(Code::AtomicContention).contains(&"BlockReduce"));
        assert!(promised(Code::MissingRestrict).is_empty());
    }

    const WELFORD: &str = r#"
// kernelpro: let ROWS = 1024
// kernelpro: let C = 768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS * 2]
// kernelpro: x = in float[ROWS * C] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = C
__global__ void row_stats(float* out, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float mean = 0.0f, m2 = 0.0f;
  for (int c = 0; c < cols; c++) {
    float v = x[r * cols + c];
    float delta = v - mean;
    mean = mean + delta / (c + 1);
    m2 += delta * (v - mean);
  }
  out[2 * r] = mean;
  out[2 * r + 1] = m2 / cols;
}
"#;

    #[test]
    fn a_recurrence_with_no_known_combine_is_named() {
        let why = why_not(WELFORD, "row_stats", &[Code::RowWalk]);
        let warp = why.iter().find(|w| w.recipe == "WarpUnits").expect("WarpUnits is promised");
        assert_eq!(
            warp.reason,
            "the loop-carried value `mean` is updated by a recurrence with no known combine (`mean = mean + delta / (c + 1)` on line 17)"
        );
        assert!(why.iter().all(|w| w.code == Code::RowWalk));
        assert_eq!(
            warp.to_string(),
            "WarpUnits did not apply because the loop-carried value `mean` is updated by a recurrence with no known combine (`mean = mean + delta / (c + 1)` on line 17)"
        );
        assert_eq!(
            explain(&why)[0],
            "RowWalk (Row walk) promises rewrites, and none applied: HoistRowWork, BlockUnits, ClusterUnits, WarpUnits, WarpScan and ColumnUnits did not apply because the loop-carried value `mean` is updated by a recurrence with no known combine (`mean = mean + delta / (c + 1)` on line 17)"
        );
        // A plain row sum keeps the promise: nothing to explain.
        let sum = WELFORD
            .replace("float mean = 0.0f, m2 = 0.0f;", "float mean = 0.0f;\n  float m2 = 0.0f;")
            .replace("    float delta = v - mean;\n", "")
            .replace("mean = mean + delta / (c + 1);", "mean += v;")
            .replace("m2 += delta * (v - mean);", "m2 += v * v;");
        let status = promise_status(&sum, "row_stats", Code::RowWalk);
        assert!(status.applies.contains(&"WarpUnits"), "{sum}\n{status:#?}");
        assert!(why_not(&sum, "row_stats", &[Code::RowWalk]).is_empty());
    }

    #[test]
    fn a_store_along_threadidx_y_is_named() {
        let text = r#"
// kernelpro: let H = 1024
// kernelpro: let W = 1024
// kernelpro: grid = (ceil_div(H, 32), ceil_div(W, 8))
// kernelpro: block = (32, 8)
// kernelpro: out = out float[H * W]
// kernelpro: h = H
// kernelpro: w = W
__global__ void fill_rows(float* out, int h, int w) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < h && c < w) out[r * w + c] = (float)(r + c);
}
"#;
        let why = why_not(text, "fill_rows", &[Code::UncoalescedAccess]);
        let transpose = why.iter().find(|w| w.recipe == "TiledTranspose").expect("TiledTranspose is promised");
        assert!(transpose.reason.contains("fastest index from threadIdx.y"), "{why:#?}");
    }
}
