//! A warp per work unit. A kernel whose thread walks a loop for its unit
//! (a row of a norm, softmax or loss; the channels of a gathered token; the
//! `k` of a dot product) gives each unit to one warp: every top-level loop
//! whose bound is not a small constant is split across the lanes
//! (`c = start + lane; c += 32`), and each value the loop carries is combined
//! after it with a shuffle all-reduction, so every lane sees the unit's
//! total as the user's later statements expect. Carried values may be sums
//! (`s += e`, `s = s + e`, `n++`), products (`p *= e`), extrema (`m = fmaxf(m, e)`,
//! `if (e > m) m = e;`), an online softmax's running max and rescaled sum, and arg-extrema (`if (e > best) { best = e; idx = c; }`,
//! first index kept on ties). Statements outside the loops run on every lane
//! (they see the same values); the ones that store run on lane 0, followed by
//! `__syncwarp()` so later loops see them. Anything else a loop does to a value
//! declared outside it, a store whose index does not follow the loop variable,
//! or a load of a buffer the loop writes at another index, and the rewrite
//! does not apply.
//!
//! A second rewrite turns `double` accumulators and casts into `float` when
//! the kernel's buffers hold no doubles.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{
    Piece, Units, declared_in, flat, is_loop, leaves_unit, names_in, stores, strip_parens, units, whole_warps,
};
use tree_sitter::Node;

pub struct WarpUnits;

const EXTREMA: &[&str] = &["fmaxf", "fmax", "max", "fminf", "fmin", "min", "std::max", "std::min"];
/// A loop bounded by a literal below this stays serial: a warp would idle most of its lanes.
const MIN_SPLIT_TRIPS: i64 = 64;

/// How a value carried by a split loop is combined across the lanes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Carry {
    Sum(String),
    /// `v *= e`, `v = v * e`.
    Prod(String),
    /// `v = f(v, e)`.
    Call(String, String),
    /// `if (e OP v) v = e;` with `greater` for a maximum.
    Compare(String, bool),
    /// `if (e OP best) { best = e; idx = c; }`: (best, idx, greater, strict).
    Arg(String, String, bool, bool),
    /// An online softmax's running maximum and rescaled sum (`n = fmaxf(m, v); s = s * expf(m - n) +
    /// expf(v - n); m = n;`): (s, m, the max function, the exp function).
    Online(String, String, String, String),
}

impl Carry {
    fn names(&self) -> Vec<&str> {
        match self {
            Carry::Sum(v) | Carry::Prod(v) | Carry::Call(v, _) | Carry::Compare(v, _) => vec![v],
            Carry::Arg(b, i, ..) => vec![b, i],
            Carry::Online(sum, max, ..) => vec![sum, max],
        }
    }

    /// Statement run on every lane before the loop (sums and products: the initial value counts once).
    pub(super) fn before(&self, lane: &str) -> Option<String> {
        match self {
            Carry::Sum(v) => Some(format!("if ({lane} != 0) {v} = 0;")),
            Carry::Prod(v) => Some(format!("if ({lane} != 0) {v} = 1;")),
            _ => None,
        }
    }

    /// The statement folding another partial (`o`: one expression per [`Self::names`], in that
    /// order) into this thread's: the one definition of each combine, used across lanes, across a
    /// block's warps and across a cluster's blocks.
    pub(super) fn merge(&self, o: &[String]) -> String {
        match self {
            Carry::Sum(v) => format!("{v} += {};", o[0]),
            Carry::Prod(v) => format!("{v} *= {};", o[0]),
            Carry::Call(v, f) => format!("{v} = {f}({v}, {});", o[0]),
            Carry::Compare(v, greater) => {
                format!("if ({} {} {v}) {v} = {};", o[0], if *greater { '>' } else { '<' }, o[0])
            }
            Carry::Arg(b, i, greater, strict) => {
                let op = if *greater { '>' } else { '<' };
                // The original keeps the first index on ties when it compares strictly, else the last.
                let tie = if *strict { '<' } else { '>' };
                let (ob, oi) = (&o[0], &o[1]);
                format!("if ({ob} {op} {b} || ({ob} == {b} && {oi} {tie} {i})) {{ {b} = {ob}; {i} = {oi}; }}")
            }
            Carry::Online(sum, max, fmax, exp) => online_merge(sum, max, fmax, exp, &o[1], &o[0]),
        }
    }

    /// After the warps' all-reductions, a block's: each warp's value through shared
    /// memory, every thread folding them in the same order (so all agree). `tid` is the
    /// thread's index within its block.
    fn across_warps(&self, tid: &str) -> String {
        warp_fold(&self.names(), tid, |o| self.merge(o))
    }

    /// ColumnUnits' combine after a column's loop: each warp's value per column (a lane's own
    /// unit) through `[32][33]` shared slots (no bank conflicts), every thread folding its
    /// column's in warp order.
    pub(super) fn across_columns(&self) -> String {
        shared_fold(&self.names(), "[32][33]", |w| format!("[{w}][kp_col]"), "kp_row", None, |o| self.merge(o))
    }

    /// After the block's all-reduction, a cluster's: see [`cluster_fold`].
    fn across_cluster(&self) -> String {
        cluster_fold(&self.names(), |o| self.merge(o))
    }

    /// The butterfly all-reduction after the loop.
    fn after(&self) -> String {
        let head = "for (int kp_o = 16; kp_o > 0; kp_o >>= 1)";
        let sh = |v: &str| format!("__shfl_xor_sync(0xffffffffu, {v}, kp_o)");
        // Each name's other lane's value, bound first where the combine reads it twice.
        let temps: &[&str] = match self {
            Carry::Sum(_) | Carry::Prod(_) | Carry::Call(..) => &[],
            Carry::Compare(..) => &["kp_t"],
            Carry::Arg(..) => &["kp_t", "kp_j"],
            Carry::Online(..) => &["kp_s", "kp_m"],
        };
        let names = self.names();
        if temps.is_empty() {
            return format!("{head} {}", self.merge(&[sh(names[0])]));
        }
        // The online pair binds its maximum first.
        let mut order: Vec<usize> = (0..names.len()).collect();
        if matches!(self, Carry::Online(..)) {
            order.reverse();
        }
        let binds: String = order.iter().map(|&n| format!("const auto {} = {}; ", temps[n], sh(names[n]))).collect();
        format!("{head} {{ {binds}{} }}", self.merge(&temps.iter().map(|t| t.to_string()).collect::<Vec<_>>()))
    }
}

/// Shared slots for the values a combine carries (at most two: a pair's).
const SLOTS: [&str; 2] = ["kp_x", "kp_y"];

/// Each warp's `names` through shared memory, every thread of the block folding them with `merge`
/// in warp order (so all agree); `tid` is the thread's index within its block.
fn warp_fold(names: &[&str], tid: &str, merge: impl Fn(&[String]) -> String) -> String {
    let lane0 = format!("({tid} & 31) == 0");
    shared_fold(names, "[32]", |w| format!("[{w}]"), &format!("{tid} >> 5"), Some(&lane0), merge)
}

/// Each warp's `names` through shared memory, a slot of `shape` per name, and every thread folding
/// them with `merge` in warp order (so all agree): `at(w)` is warp `w`'s element of a slot for this
/// thread, `own` the thread's warp, `publish` the threads that store (none: every thread, where each
/// lane holds its own column's value, as ColumnUnits' `[32][33]` slots).
fn shared_fold(
    names: &[&str],
    shape: &str,
    at: impl Fn(&str) -> String,
    own: &str,
    publish: Option<&str>,
    merge: impl Fn(&[String]) -> String,
) -> String {
    let decls: String =
        names.iter().zip(SLOTS).map(|(n, x)| format!("__shared__ decltype({n}) {x}{shape}; ")).collect();
    let stores: Vec<String> = names.iter().zip(SLOTS).map(|(n, x)| format!("{x}{} = {n};", at(own))).collect();
    let stores = match publish {
        Some(who) => format!("if ({who}) {{ {} }} ", stores.join(" ")),
        None => format!("{} ", stores.join(" ")),
    };
    let loads: String = names.iter().zip(SLOTS).map(|(n, x)| format!("{n} = {x}{}; ", at("0"))).collect();
    let others: Vec<String> = SLOTS[..names.len()].iter().map(|x| format!("{x}{}", at("kp_w"))).collect();
    format!(
        "{{ {decls}{stores}__syncthreads(); {loads}for (int kp_w = 1; kp_w < kp_nw; ++kp_w) {{ {} }} __syncthreads(); }}",
        merge(&others)
    )
}

/// After each block of a cluster holds its total of `names`, the cluster's: block thread 0
/// publishes it in a shared slot, and every block folds all blocks' slots (distributed shared
/// memory) with `merge` in rank order, so every block gets the same total. The first
/// `cluster.sync()` orders the slots' stores before the reads; the second keeps each slot alive and
/// unchanged (the block may not go on to its next combine, or exit) until every block has read it.
fn cluster_fold(names: &[&str], merge: impl Fn(&[String]) -> String) -> String {
    let slots: Vec<String> = (0..names.len()).map(|i| format!("kp_c{i}")).collect();
    let decls: String = names.iter().zip(&slots).map(|(n, c)| format!("__shared__ decltype({n}) {c}; ")).collect();
    let stores: Vec<String> = names.iter().zip(&slots).map(|(n, c)| format!("{c} = {n};")).collect();
    let remote = |c: &str, rank: &str| format!("*kp_cluster.map_shared_rank(&{c}, {rank})");
    let loads: String = names.iter().zip(&slots).map(|(n, c)| format!("{n} = {}; ", remote(c, "0u"))).collect();
    let binds: String =
        slots.iter().enumerate().map(|(i, c)| format!("const auto kp_p{i} = {}; ", remote(c, "kp_r"))).collect();
    let others: Vec<String> = (0..names.len()).map(|i| format!("kp_p{i}")).collect();
    format!(
        "{{ {decls}if (kp_tid == 0) {{ {} }} kp_cluster.sync(); {loads}for (unsigned kp_r = 1; kp_r < kp_cn; ++kp_r) {{ {binds}{} }} kp_cluster.sync(); }}",
        stores.join(" "),
        merge(&others)
    )
}

/// `for (T c = START; c < END; ++c)`: (c, the init value node, the update node), when END is not a small literal.
pub(super) fn walk_loop<'t>(k: &Kernel, f: Node<'t>) -> Option<(String, Node<'t>, Node<'t>)> {
    if f.kind() != "for_statement" {
        return None;
    }
    let init = f.child_by_field_name("initializer").filter(|d| d.kind() == "declaration")?;
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let c = k.text_of(decl.child_by_field_name("declarator")?).to_string();
    let cond = strip_parens(f.child_by_field_name("condition")?);
    let op = k.text_of(cond.child_by_field_name("operator")?);
    let (l, r) = (cond.child_by_field_name("left")?, cond.child_by_field_name("right")?);
    if cond.kind() != "binary_expression" || !["<", "<="].contains(&op) || k.text_of(l) != c {
        return None;
    }
    if let Ok(n) = k.text_of(r).trim().parse::<i64>()
        && n < MIN_SPLIT_TRIPS
    {
        return None;
    }
    let step = f.child_by_field_name("update")?;
    let steps = [format!("++{c}"), format!("{c}++"), format!("{c}+=1"), format!("{c}={c}+1")];
    steps.contains(&flat(k, step)).then(|| (c, decl.child_by_field_name("value").expect("init value"), step))
}

/// `e` with identifier `v` occurrences (by byte start).
pub(super) fn occurrences(k: &Kernel, node: Node, v: &str) -> Vec<usize> {
    descendants(node)
        .into_iter()
        .filter(|n| n.kind() == "identifier" && k.text_of(*n) == v)
        .map(|n| n.start_byte())
        .collect()
}

pub(crate) fn mentions(k: &Kernel, node: Node, v: &str) -> bool {
    !occurrences(k, node, v).is_empty()
}

/// Merges another lane's (or warp's) online-softmax pair `(om, os)` into `(max, sum)`; a side with no
/// element yet (a maximum of -inf) adds nothing.
fn online_merge(sum: &str, max: &str, fmax: &str, exp: &str, om: &str, os: &str) -> String {
    format!(
        "{{ const auto kp_n = {fmax}({max}, {om}); {sum} = ({max} == -INFINITY ? 0 : {sum} * {exp}({max} - kp_n)) + ({om} == -INFINITY ? 0 : {os} * {exp}({om} - kp_n)); {max} = kp_n; }}"
    )
}

/// `n` as `MAX(m, v)`: a call in place, or a loop temporary holding one: (m, MAX, the call when it is a
/// temporary's).
fn max_call<'t>(
    k: &Kernel,
    body: Node<'t>,
    inner: &[String],
    n: Node<'t>,
) -> Option<(String, String, Option<Node<'t>>)> {
    let n = strip_parens(n);
    let call = if n.kind() == "identifier" && inner.iter().any(|i| i == k.text_of(n)) {
        descendants(body).into_iter().find_map(|d| {
            d.child_by_field_name("declarator")
                .filter(|x| d.kind() == "init_declarator" && k.text_of(*x) == k.text_of(n))?;
            d.child_by_field_name("value").map(strip_parens).filter(|v| v.kind() == "call_expression")
        })?
    } else {
        (n.kind() == "call_expression").then_some(n)?
    };
    let f = k.text_of(call.child_by_field_name("function")?);
    let [a, b] = statements(call.child_by_field_name("arguments")?)[..] else { return None };
    let m = [a, b].into_iter().find(|x| x.kind() == "identifier" && !inner.iter().any(|i| i == k.text_of(*x)))?;
    ["fmaxf", "fmax", "max"]
        .contains(&f)
        .then(|| (k.text_of(m).to_string(), f.to_string(), (call != n).then_some(call)))
}

/// The online-softmax pair in a loop body: `s = s * EXP(m - n) + E;` and `m = n;` where `n` is
/// `MAX(m, v)` (written in place or as a temporary declared in the loop): (s, m, MAX, EXP, the two
/// assignments, every occurrence of `m` and `s` they and the temporary hold).
fn online_pair(k: &Kernel, body: Node, inner: &[String]) -> Option<(Carry, Vec<usize>, Vec<usize>)> {
    let assigns: Vec<Node> = descendants(body)
        .into_iter()
        .filter(|d| {
            d.kind() == "assignment_expression"
                && d.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "=")
        })
        .collect();
    for m_set in &assigns {
        let (Some(target), Some(right)) = (m_set.child_by_field_name("left"), m_set.child_by_field_name("right"))
        else {
            continue;
        };
        let Some((m, fmax, temp_call)) = max_call(k, body, inner, right) else { continue };
        if k.text_of(target) != m {
            continue;
        }
        // The sum: `s = s * EXP(m - n) + E` (either order of the sum and of the product).
        for s_set in &assigns {
            let (Some(st), Some(sr)) = (s_set.child_by_field_name("left"), s_set.child_by_field_name("right")) else {
                continue;
            };
            let sr = strip_parens(sr);
            let sum = k.text_of(st);
            if st.kind() != "identifier"
                || sum == m
                || sr.kind() != "binary_expression"
                || k.text_of(sr.child_by_field_name("operator")?) != "+"
            {
                continue;
            }
            let (l, r) =
                (strip_parens(sr.child_by_field_name("left")?), strip_parens(sr.child_by_field_name("right")?));
            let (scaled, fresh) = if mentions(k, l, sum) { (l, r) } else { (r, l) };
            if mentions(k, fresh, sum)
                || scaled.kind() != "binary_expression"
                || k.text_of(scaled.child_by_field_name("operator")?) != "*"
            {
                continue;
            }
            let (a, b) =
                (strip_parens(scaled.child_by_field_name("left")?), strip_parens(scaled.child_by_field_name("right")?));
            let factor = if k.text_of(a) == sum {
                b
            } else if k.text_of(b) == sum {
                a
            } else {
                continue;
            };
            let exp = factor
                .child_by_field_name("function")
                .filter(|_| factor.kind() == "call_expression")
                .map(|f| k.text_of(f))?;
            if !["expf", "__expf", "exp"].contains(&exp) || !mentions(k, factor, &m) {
                continue;
            }
            let mut owned: Vec<usize> = [*m_set, *s_set]
                .iter()
                .flat_map(|x| occurrences(k, *x, &m).into_iter().chain(occurrences(k, *x, sum)))
                .collect();
            if let Some(call) = temp_call {
                owned.extend(occurrences(k, call, &m));
            }
            let carry = Carry::Online(sum.to_string(), m.clone(), fmax.clone(), exp.to_string());
            return Some((carry, vec![m_set.start_byte(), s_set.start_byte()], owned));
        }
    }
    None
}

/// The loop's carried values, or `None` when it does anything else to a value declared outside it.
pub(super) fn carries(k: &Kernel, f: Node, c: &str) -> Option<Vec<Carry>> {
    let body = f.child_by_field_name("body")?;
    let inner = declared_in(k, f);
    let mut out: Vec<Carry> = Vec::new();
    let mut owned: Vec<usize> = Vec::new();
    let mut handled: Vec<usize> = Vec::new();
    if let Some((carry, assigns, mentions_owned)) = online_pair(k, body, &inner) {
        out.push(carry);
        handled.extend(assigns);
        owned.extend(mentions_owned);
    }
    // Compare-and-replace ifs first: their assignments are not updates by themselves.
    for st in descendants(body).into_iter().filter(|n| n.kind() == "if_statement") {
        if st.child_by_field_name("alternative").is_some() {
            continue;
        }
        let Some(cond) =
            st.child_by_field_name("condition").and_then(|c| c.child_by_field_name("value")).map(strip_parens)
        else {
            continue;
        };
        let Some(then) = st.child_by_field_name("consequence") else {
            continue;
        };
        let assigns: Vec<Node> = match then.kind() {
            "compound_statement" => statements(then),
            _ => vec![then],
        }
        .into_iter()
        .map(|s| s.named_child(0).filter(|e| s.kind() == "expression_statement" && e.kind() == "assignment_expression"))
        .collect::<Option<_>>()
        .unwrap_or_default();
        if assigns.is_empty() || cond.kind() != "binary_expression" {
            continue;
        }
        let Some(op) = cond.child_by_field_name("operator").map(|o| k.text_of(o)) else {
            continue;
        };
        let (Some(l), Some(r)) = (cond.child_by_field_name("left"), cond.child_by_field_name("right")) else {
            continue;
        };
        // Normalise to `e OP v`.
        let (e, v, op) = if l.kind() == "identifier"
            && !inner.iter().any(|n| n == k.text_of(l))
            && !mentions(k, r, k.text_of(l))
        {
            let mirrored = match op {
                ">" => "<",
                ">=" => "<=",
                "<" => ">",
                "<=" => ">=",
                _ => continue,
            };
            (r, k.text_of(l), mirrored)
        } else if r.kind() == "identifier" && !inner.iter().any(|n| n == k.text_of(r)) && !mentions(k, l, k.text_of(r))
        {
            (l, k.text_of(r), op)
        } else {
            continue;
        };
        if ![">", ">=", "<", "<="].contains(&op) {
            continue;
        }
        let (greater, strict) = (op.starts_with('>'), op.len() == 1);
        let mut idx = None;
        let mut ok = true;
        for a in &assigns {
            let (Some(t), Some(o), Some(rhs)) =
                (a.child_by_field_name("left"), a.child_by_field_name("operator"), a.child_by_field_name("right"))
            else {
                ok = false;
                break;
            };
            if k.text_of(o) != "=" || t.kind() != "identifier" {
                ok = false;
                break;
            }
            if k.text_of(t) == v && flat(k, rhs) == flat(k, e) {
                continue;
            }
            if k.text_of(t) != v && flat(k, rhs) == c && idx.is_none() && !inner.iter().any(|n| n == k.text_of(t)) {
                idx = Some(k.text_of(t).to_string());
                continue;
            }
            ok = false;
        }
        if !ok || !assigns.iter().any(|a| a.child_by_field_name("left").is_some_and(|t| k.text_of(t) == v)) {
            continue;
        }
        handled.extend(assigns.iter().map(|a| a.start_byte()));
        owned.extend(occurrences(k, cond, v));
        for a in &assigns {
            owned.extend(a.child_by_field_name("left").map(|t| t.start_byte()));
        }
        out.push(match idx {
            Some(i) => Carry::Arg(v.to_string(), i, greater, strict),
            None => Carry::Compare(v.to_string(), greater),
        });
    }
    for d in descendants(body) {
        let (target, op, right) = match d.kind() {
            "assignment_expression" if !handled.contains(&d.start_byte()) => (
                d.child_by_field_name("left")?,
                k.text_of(d.child_by_field_name("operator")?),
                d.child_by_field_name("right"),
            ),
            "update_expression" => (d.child_by_field_name("argument")?, "++", None),
            _ => continue,
        };
        let target = strip_parens(target);
        if target.kind() != "identifier" {
            continue; // a store: checked by the caller
        }
        let v = k.text_of(target);
        if inner.iter().any(|n| n == v) {
            continue;
        }
        let carry = match (op, right.map(strip_parens)) {
            ("++", _) => Carry::Sum(v.to_string()),
            ("+=" | "-=", Some(r)) if !mentions(k, r, v) => Carry::Sum(v.to_string()),
            ("*=", Some(r)) if !mentions(k, r, v) => Carry::Prod(v.to_string()),
            ("=", Some(r))
                if r.kind() == "binary_expression"
                    && r.child_by_field_name("operator").is_some_and(|o| ["+", "*"].contains(&k.text_of(o))) =>
            {
                let times = r.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "*");
                let (a, b) = (r.child_by_field_name("left")?, r.child_by_field_name("right")?);
                let own = |x: Node, y: Node| {
                    strip_parens(x).kind() == "identifier" && k.text_of(strip_parens(x)) == v && !mentions(k, y, v)
                };
                if own(a, b) {
                    owned.push(strip_parens(a).start_byte());
                } else if own(b, a) {
                    owned.push(strip_parens(b).start_byte());
                } else {
                    return None;
                }
                if times { Carry::Prod(v.to_string()) } else { Carry::Sum(v.to_string()) }
            }
            ("=", Some(r)) if r.kind() == "call_expression" => {
                let f = k.text_of(r.child_by_field_name("function")?);
                let [a, b] = statements(r.child_by_field_name("arguments")?)[..] else {
                    return None;
                };
                let (own, e) = if k.text_of(a) == v { (a, b) } else { (b, a) };
                if !EXTREMA.contains(&f) || k.text_of(own) != v || mentions(k, e, v) {
                    return None;
                }
                owned.push(own.start_byte());
                Carry::Call(v.to_string(), f.to_string())
            }
            _ => return None,
        };
        owned.push(target.start_byte());
        if d.kind() == "update_expression" && !["++", "--"].iter().any(|o| k.text_of(d).contains(o)) {
            return None;
        }
        if let Some(prev) = out.iter().find(|p| p.names().contains(&v)) {
            if *prev != carry {
                return None;
            }
        } else {
            out.push(carry);
        }
    }
    // Every other mention of a carried value would read a lane's partial.
    for carry in &out {
        for v in carry.names() {
            if occurrences(k, body, v).iter().any(|at| !owned.contains(at)) {
                return None;
            }
        }
    }
    let header_ok = [f.child_by_field_name("condition"), f.child_by_field_name("initializer")]
        .into_iter()
        .flatten()
        .all(|h| out.iter().all(|cv| cv.names().iter().all(|v| !mentions(k, h, v))));
    header_ok.then_some(out)
}

/// Whether the loop's stores follow its variable and its loads of stored buffers read what the same iteration stores.
pub(super) fn iterations_independent(k: &Kernel, f: Node, c: &str) -> bool {
    let inner = declared_in(k, f);
    let follows = |n: Node| names_in(k, n).iter().any(|x| *x == c || inner.iter().any(|i| i == x));
    let st = stores(k, f);
    let mut stored: Vec<(String, String)> = Vec::new();
    for (p, at) in &st {
        if p == "*"
            || (p.starts_with("atomic") && !k.text_of(*at).contains(c))
            || (!p.starts_with("atomic") && !follows(*at))
        {
            return false;
        }
        if !p.starts_with("atomic") {
            stored.push((p.clone(), flat(k, *at)));
        }
    }
    descendants(f).into_iter().filter(|n| n.kind() == "subscript_expression").all(|s| {
        let (Some(a), Some(i)) =
            (s.child_by_field_name("argument"), s.child_by_field_name("indices").and_then(|i| i.named_child(0)))
        else {
            return false;
        };
        let p = k.text_of(a);
        let same: Vec<&(String, String)> = stored.iter().filter(|(q, _)| q == p).collect();
        same.is_empty() || same.iter().any(|(_, at)| *at == flat(k, i))
    })
}

/// Who shares a unit: a warp (lanes), a whole block (its threads, warps combined through shared
/// memory), or a thread-block cluster (its blocks' threads, blocks combined through distributed
/// shared memory; its size is the kernel's `__cluster_dims__`, not the body's).
#[derive(Clone, Copy, PartialEq)]
enum Team {
    Warp,
    Block,
    Cluster,
}

impl Team {
    /// Before a block's split loop: with one block per SM on a few long rows,
    /// each thread must keep several loads in flight to cover DRAM latency, and
    /// the loads do not depend on the carried values, so unrolled iterations
    /// issue them together.
    fn unroll(self) -> Option<String> {
        (self != Team::Warp).then(|| "#pragma unroll 4".to_string())
    }

    fn stride(self) -> &'static str {
        if self == Team::Warp { "32" } else { "kp_team" }
    }
    fn sync(self) -> &'static str {
        match self {
            Team::Warp => "__syncwarp();",
            Team::Block => "__syncthreads();",
            // Orders a store before other blocks' reads (release and acquire at cluster scope).
            Team::Cluster => "kp_cluster.sync();",
        }
    }
    /// The thread's index within its block, as the across-warps step names it.
    fn block_tid(self) -> &'static str {
        if self == Team::Cluster { "kp_tid" } else { "kp_lane" }
    }
}

fn generate(k: &Kernel, u: &Units, float_acc: bool, team: Team) -> Option<(String, usize)> {
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let mut lines: Vec<String> = Vec::new();
    let mut split = 0;
    let mut skip_to = 0;
    for (at, piece) in u.body.iter().enumerate() {
        if at < skip_to {
            continue;
        }
        if let Some((merged, next)) = online(k, u, at, &ind2, team) {
            lines.extend(merged);
            split += 2;
            skip_to = next;
            continue;
        }
        let Piece::Node(n) = *piece else {
            lines.push(render(k, *piece, &[], &ind2)?);
            continue;
        };
        if let Some((c, init, step)) = walk_loop(k, n) {
            // A `break` ends the walk at an element another lane may not have reached.
            if descendants(n).iter().any(|d| d.kind() == "break_statement") {
                return None;
            }
            let carried = carries(k, n, &c)?;
            if !iterations_independent(k, n, &c) || u.names().contains(&c.as_str()) {
                return None;
            }
            lines.extend(carried.iter().filter_map(|c| c.before("kp_lane")));
            let edits = [
                (init.byte_range(), format!("{} + kp_lane", k.text_of(init))),
                (step.byte_range(), format!("{c} += {}", team.stride())),
            ];
            lines.extend(team.unroll());
            lines.push(render(k, *piece, &edits, &ind2)?);
            lines.extend(carried.iter().map(Carry::after));
            if team != Team::Warp {
                lines.extend(carried.iter().map(|c| c.across_warps(team.block_tid())));
            }
            if team == Team::Cluster {
                lines.extend(carried.iter().map(Carry::across_cluster));
            }
            if !stores(k, n).is_empty() {
                lines.push(team.sync().to_string());
            }
            split += 1;
            continue;
        }
        let st = stores(k, n);
        if st.is_empty() {
            lines.push(render(k, *piece, &[], &ind2)?);
            continue;
        }
        // A statement that stores runs once, on lane 0; it may not also set values the others read later.
        let outer_assigned = descendants(n).into_iter().any(|d| {
            let t = match d.kind() {
                "assignment_expression" => d.child_by_field_name("left"),
                "update_expression" => d.child_by_field_name("argument"),
                _ => None,
            };
            t.map(strip_parens)
                .is_some_and(|t| t.kind() == "identifier" && !declared_in(k, n).iter().any(|x| x == k.text_of(t)))
        });
        // Lane 0 alone may not leave the unit: the others would meet the next shuffle without it.
        if outer_assigned || leaves_unit(n) || n.kind() == "declaration" || descendants(n).into_iter().any(is_loop) {
            return None;
        }
        lines
            .push(format!("if (kp_lane == 0) {{\n{ind2}  {}\n{ind2}}}", render(k, *piece, &[], &format!("{ind2}  "))?));
        lines.push(team.sync().to_string());
    }
    if split == 0 {
        return None;
    }
    let mut inner = String::new();
    for l in u.rebind("kp_u").lines() {
        inner.push_str(&format!("{ind2}{l}\n"));
    }
    for l in &lines {
        inner.push_str(&format!("{ind2}{l}\n"));
    }
    let prologue = u.prologue(k, &ind)?;
    let mut text = if team == Team::Warp {
        u.warp_loop(
            &prologue,
            "One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).",
            &inner,
            &ind,
            outer,
        )
    } else if team == Team::Cluster {
        let (block, blocks) = (u.block_index(), u.block_count());
        format!(
            "{{\n{ind}// One thread-block cluster per unit; its blocks' threads split the unit's loops, warps combined through shared memory and blocks through distributed shared memory (kernelpro ClusterUnits).\n{prologue}{ind}const cooperative_groups::cluster_group kp_cluster = cooperative_groups::this_cluster();\n{ind}const int kp_tid = (int){BLOCK_TID};\n{ind}const int kp_nw = (int){BLOCK_THREADS} >> 5;\n{ind}const unsigned kp_cn = kp_cluster.num_blocks();\n{ind}const int kp_lane = (int)kp_cluster.block_rank() * (int){BLOCK_THREADS} + kp_tid;\n{ind}const int kp_team = (int)kp_cn * (int){BLOCK_THREADS};\n{ind}// Blocks of a cluster are consecutive in x and the grid's x is a multiple of the cluster's.\n{ind}for (long long kp_u = {block} / kp_cn; kp_u < {}; kp_u += {blocks} / kp_cn) {{\n{inner}{ind}}}\n{outer}}}",
            u.count()
        )
    } else {
        let (block, blocks) = (u.block_index(), u.block_count());
        format!(
            "{{\n{ind}// One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).\n{prologue}{ind}const int kp_lane = (int){BLOCK_TID};\n{ind}const int kp_team = (int){BLOCK_THREADS};\n{ind}const int kp_nw = kp_team >> 5;\n{ind}for (long long kp_u = {block}; kp_u < {}; kp_u += {blocks}) {{\n{inner}{ind}}}\n{outer}}}",
            u.count()
        )
    };
    if float_acc {
        text = to_float(&text);
    }
    Some((text, split))
}

/// Functions whose value of `e - m` is `exp(e) / exp(m)`.
const EXPS: &[&str] = &["expf", "__expf", "exp"];

/// A walk for a maximum followed by a walk summing `exp(e - m)` of it (softmax's
/// two first passes) as one online pass: each lane keeps its running maximum and
/// its sum scaled to it (`s *= exp(m_old - m)` when the maximum grows), and one
/// shuffle all-reduction combines both pairs. `u.body[at]` is the maximum's loop;
/// the declarations between the loops go before them. Returns the lines and
/// the index of the piece after the sum's loop.
fn online(k: &Kernel, u: &Units, at: usize, ind: &str, team: Team) -> Option<(Vec<String>, usize)> {
    let node = |i: usize| if let Some(Piece::Node(n)) = u.body.get(i) { Some(*n) } else { None };
    let a = node(at)?;
    let (c, init, step) = walk_loop(k, a)?;
    let (m, max) = match carries(k, a, &c)?[..] {
        [Carry::Call(ref m, ref f)] if ["fmaxf", "fmax", "max", "std::max"].contains(&f.as_str()) => {
            (m.clone(), Some(f.clone()))
        }
        [Carry::Compare(ref m, true)] => (m.clone(), None),
        _ => return None,
    };
    // Declarations between the loops, not reading the maximum.
    let mut j = at + 1;
    while let Some(d) = node(j).filter(|d| d.kind() == "declaration") {
        if mentions(k, d, &m)
            || descendants(d).into_iter().any(|x| matches!(x.kind(), "call_expression" | "subscript_expression"))
        {
            return None;
        }
        j += 1;
    }
    let b = node(j)?;
    let (c2, _, _) = walk_loop(k, b)?;
    let header = |f: Node| {
        Some(
            flat(k, f.child_by_field_name("initializer")?)
                + &flat(k, f.child_by_field_name("condition")?)
                + &flat(k, f.child_by_field_name("update")?),
        )
    };
    if c2 != c
        || header(a)? != header(b)?
        || !stores(k, b).is_empty()
        || !stores(k, a).is_empty()
        || !iterations_independent(k, a, &c)
    {
        return None;
    }
    let [Carry::Sum(ref s)] = carries(k, b, &c)?[..] else { return None };
    // The sum starts at zero between the loops: a non-zero start would be rescaled with the rest.
    let zero_start = (at + 1..j).filter_map(node).any(|d| {
        descendants(d).into_iter().any(|x| {
            x.kind() == "init_declarator"
                && x.child_by_field_name("declarator").is_some_and(|n| k.text_of(n) == s)
                && x.child_by_field_name("value")
                    .is_some_and(|v| k.text_of(v).trim_end_matches(['f', 'F']).parse::<f64>().is_ok_and(|z| z == 0.0))
        })
    });
    if !zero_start {
        return None;
    }
    if s == &m
        || descendants(a)
            .iter()
            .chain(descendants(b).iter())
            .any(|d| matches!(d.kind(), "break_statement" | "continue_statement" | "return_statement"))
    {
        return None;
    }
    // Every read of the maximum in the sum's loop is `EXP(e - m)`: the sum rescales by `EXP(m_old - m)`.
    let mut exp = None;
    for at in occurrences(k, b, &m) {
        let mut up = b.descendant_for_byte_range(at, at)?;
        let mut minus = false;
        while let Some(p) = up.parent() {
            match p.kind() {
                "parenthesized_expression" | "cast_expression" => {}
                "binary_expression"
                    if !minus
                        && p.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "-")
                        && p.child_by_field_name("right").is_some_and(|r| r.byte_range().contains(&at)) =>
                {
                    minus = true
                }
                "argument_list" if minus => {
                    let f = p.parent().and_then(|call| call.child_by_field_name("function")).map(|f| k.text_of(f))?;
                    if !EXPS.contains(&f) || exp.is_some_and(|e| e != f) {
                        return None;
                    }
                    exp = Some(f);
                    break;
                }
                _ => return None,
            }
            up = p;
        }
        exp?;
    }
    let exp = exp?;
    let combine = |x: &str, y: &str| match &max {
        Some(f) => format!("{f}({x}, {y})"),
        None => format!("({y} > {x} ? {y} : {x})"),
    };
    let mut out: Vec<String> =
        (at + 1..j).map(|i| render(k, Piece::Node(node(i).expect("declaration")), &[], ind)).collect::<Option<_>>()?;
    out.push(format!("if (kp_lane != 0) {s} = 0;"));
    let ind2 = format!("{ind}  ");
    let body_a = render(k, Piece::Node(a.child_by_field_name("body")?), &[], &ind2)?;
    let body_b = render(k, Piece::Node(b.child_by_field_name("body")?), &[], &ind2)?;
    let head = &k.text[a.start_byte()..a.child_by_field_name("body")?.start_byte()];
    let mut head = head.to_string();
    // The header with the lane's start and stride, as the other split loops get.
    let (i0, s0) = (init.start_byte() - a.start_byte(), step.start_byte() - a.start_byte());
    let (i1, s1) = (init.end_byte() - a.start_byte(), step.end_byte() - a.start_byte());
    head.replace_range(s0..s1, &format!("{c} += {}", team.stride()));
    head.replace_range(i0..i1, &format!("{} + kp_lane", k.text_of(init)));
    out.extend(team.unroll());
    out.push(format!(
        "{head}{{
{ind2}const auto kp_m0 = {m};
{ind2}{body_a}
{ind2}if ({m} != kp_m0 && {s} != 0) {s} *= {exp}(kp_m0 - {m});
{ind2}{body_b}
{ind}}}"
    ));
    // Folds another thread's (or warp's, or block's) pair `o` = [max, sum] in: the one definition
    // of this pair's combine (a sum of 0 adds nothing, whatever its maximum).
    let merge = |o: &[String]| {
        format!(
            "const auto kp_om = {}; const auto kp_os = {}; const auto kp_nm = {}; {s} = ({s} != 0 ? {s} * {exp}({m} - kp_nm) : {s}) + (kp_os != 0 ? kp_os * {exp}(kp_om - kp_nm) : kp_os); {m} = kp_nm;",
            o[0],
            o[1],
            combine(&m, "kp_om")
        )
    };
    let sh = |v: &str| format!("__shfl_xor_sync(0xffffffffu, {v}, kp_o)");
    out.push(format!("for (int kp_o = 16; kp_o > 0; kp_o >>= 1) {{ {} }}", merge(&[sh(&m), sh(s)])));
    if team != Team::Warp {
        out.push(warp_fold(&[&m, s], team.block_tid(), merge));
    }
    if team == Team::Cluster {
        out.push(cluster_fold(&[&m, s], merge));
    }
    Some((out, j + 1))
}

/// `double` as a type word (declarations, casts) becomes `float`.
pub(super) fn to_float(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("double") {
        let before_ok = rest[..at].chars().last().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let after_ok = rest[at + 6..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { "float" } else { "double" });
        rest = &rest[at + 6..];
    }
    out.push_str(rest);
    float_literals(&out)
}

/// Unsuffixed floating literals (`1.0`, `1e-5`) get an `f`, so float math stays float.
fn float_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'));
        if !starts {
            out.push(b[i] as char);
            i += 1;
            continue;
        }
        let mut j = i;
        let mut float = false;
        while j < b.len()
            && (b[j].is_ascii_digit()
                || b[j] == b'.'
                || ((b[j] == b'e' || b[j] == b'E') && !text[i..j].starts_with("0x"))
                || ((b[j] == b'-' || b[j] == b'+') && j > i && (b[j - 1] == b'e' || b[j - 1] == b'E')))
        {
            float |= matches!(b[j], b'.' | b'e' | b'E');
            j += 1;
        }
        let suffixed = j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_');
        out.push_str(&text[i..j]);
        if float && !suffixed && !text[i..j].starts_with("0x") {
            out.push('f');
        }
        i = j;
    }
    out
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    team_rewrites(k, Team::Warp)
}

/// Fewer units than this leave a warp-per-unit launch under 24 warps per SM (of 64), too few
/// loads in flight to stream long rows: a block per unit then. The H100 run of 2026-12-05: a
/// matrix-vector product over 2048 rows of 32768 (15.5 warps an SM) reached 0.67x of PyTorch as
/// a warp per row.
const FEW_UNITS: i64 = 24 * super::launch::SMS as i64;

fn block_rewrites(k: &Kernel) -> Vec<Rewrite> {
    // Only for a row reduction or a row's dot product (a matrix-vector product) with few rows under
    // the spec's sizes (GEMM outputs and gathers are many).
    use kernelpro_source::kernel_model::Pattern;
    let rows = k
        .model()
        .and_then(|m| m.pattern())
        .is_some_and(|p| matches!(p.pattern, Pattern::RowReduction | Pattern::Contraction));
    let Some(u) = units(k).filter(|_| rows) else { return Vec::new() };
    if unit_count(k, &u).is_none_or(|n| n >= FEW_UNITS) && !rewalked_rows_spill_l2(k, &u) {
        return Vec::new();
    }
    team_rewrites(k, Team::Block)
}

/// [`BlockUnits`] on a thread-per-row form whose rows were read from facts by the caller
/// ([`flat_rows`](super::flat_rows): a row's work over a flattened loop nest, which the model
/// does not classify), for few units only.
pub(super) fn block_units_of_rows(text: &str, kernel: &str) -> Vec<Rewrite> {
    super::with_units_view(text, kernel, |k| {
        let Some(u) = units(k) else { return Vec::new() };
        if unit_count(k, &u).is_none_or(|n| n >= FEW_UNITS) && !rewalked_rows_spill_l2(k, &u) {
            return Vec::new();
        }
        team_rewrites(k, Team::Block)
    })
}

/// L2 of an H100 or H200 (50 MB).
const L2_BYTES: i64 = 50 << 20;

/// Whether a unit walked by two or more loops (max, then sum, then write) keeps more rows in
/// flight as warps than L2 holds, so the later walks read DRAM again: a warp per row keeps up to
/// 64 rows an SM in flight, a block per row 4 to 8. The H100 corpus run (2026-12-05): softmax
/// over 4096 rows of 4096 floats as a warp per row (64 MiB in flight) ran at 0.38-0.44x of
/// PyTorch's block-per-row kernel.
fn rewalked_rows_spill_l2(k: &Kernel, u: &Units) -> bool {
    let scope = spec_scope(k);
    let trips: Vec<i64> = walk_loops(k, u).filter_map(|n| trip_count(k, n, scope.as_ref().map(|(s, _)| s))).collect();
    let (Some(&longest), Some(units)) = (trips.iter().max(), unit_count(k, u)) else { return false };
    let in_flight = units.min(64 * super::launch::SMS as i64);
    trips.len() >= 2 && in_flight.saturating_mul(longest).saturating_mul(4) > L2_BYTES
}

/// The spec's names and integer scalar arguments, to evaluate the kernel's bounds with.
fn spec_scope(k: &Kernel) -> Option<(kernelpro_spec::Scope, kernelpro_spec::LaunchSpec)> {
    let launch = k.launch()?;
    let mut scope = kernelpro_spec::Scope::default();
    for (name, v) in &launch.lets {
        scope.set(name, *v);
    }
    for a in &launch.args {
        if let kernelpro_spec::Arg::Scalar(s) = a
            && let kernelpro_spec::ScalarValue::I64(v) = s.value
        {
            scope.set(&s.name, v);
        }
    }
    Some((scope, launch))
}

/// Whether splitting the unit's loops across a team pays: at least one split
/// loop runs [`MIN_SPLIT_TRIPS`] or more times under the spec's values, and
/// either walks memory contiguously (some access in it moves by at most 4
/// elements a trip, so neighbouring lanes read neighbouring elements) or the
/// units are too few to fill the GPU with a thread each (then more threads pay
/// even with scattered reads: argmax over 4095 strided rows of 16380 columns,
/// 2.4x). A 64-feature walk with a stride of H*W over a million positions (an
/// RMSNorm over channels) or a 4x4 pooling window made lanes read scattered
/// addresses or idle: 0.06-0.25x on the GPU.
fn split_pays(k: &Kernel, u: &Units) -> bool {
    let scope = spec_scope(k);
    let scope = scope.as_ref().map(|(scope, _)| scope);
    let few_units = unit_count(k, u).is_none_or(|n| n < FULL_GPU_THREADS);
    // With few units only the trip count matters; without a model, contiguity is not judged.
    let model = if few_units { None } else { k.model() };
    if !few_units && model.is_none() {
        return true;
    }
    walk_loops(k, u).any(|n| {
        trip_count(k, n, scope).is_none_or(|t| t >= MIN_SPLIT_TRIPS)
            && model.as_ref().is_none_or(|m| reads_contiguously(m, n))
    })
}

/// The unit's top-level loops that walk it (`for (c = …; c < E; c += …)`).
fn walk_loops<'a, 't>(k: &'a Kernel, u: &'a Units<'t>) -> impl Iterator<Item = Node<'t>> + 'a {
    u.body
        .iter()
        .filter_map(|p| if let Piece::Node(n) = p { Some(*n) } else { None })
        .filter(move |n| walk_loop(k, *n).is_some())
}

/// Whether some access in loop `f` moves by at most 4 elements a trip (so
/// neighbouring lanes of a split read neighbouring elements); true when the
/// model does not know the loop or its counter.
fn reads_contiguously(model: &kernelpro_source::kernel_model::KernelModel, f: Node) -> bool {
    let line = f.start_position().row as u32;
    let Some((at, l)) = model.loops.iter().enumerate().find(|(_, l)| l.span.start.line == line) else { return true };
    let Some(atom) = &l.atom else { return true };
    model
        .accesses
        .iter()
        .filter(|a| a.loops.contains(&at))
        .any(|a| a.index.coefficient(atom).as_constant().is_some_and(|c| c != 0 && c.abs() <= 4))
}

/// Threads that fill an H100 (132 SMs x 2048): units past this keep every SM busy with a thread each.
const FULL_GPU_THREADS: i64 = 132 * 2048;

/// The trip count of a `for (c = …; c < E; …)` loop: `E` under the spec's values.
fn trip_count(k: &Kernel, f: Node, scope: Option<&kernelpro_spec::Scope>) -> Option<i64> {
    let r = strip_parens(f.child_by_field_name("condition")?).child_by_field_name("right")?;
    kernelpro_spec::eval(k.text_of(r), scope?).ok()
}

/// The number of units under the spec's first launch: the guard bounds evaluated with its scalar arguments.
fn unit_count(k: &Kernel, u: &Units) -> Option<i64> {
    let (scope, launch) = spec_scope(k)?;
    let mut n: i64 = 1;
    for i in &u.indices {
        n = n.checked_mul(kernelpro_spec::eval(&i.bound, &scope).ok()?)?;
    }
    for (_, _, axis) in &u.fixed {
        let g = launch.grid[match axis {
            'y' => 1,
            _ => 2,
        }] as i64;
        n = n.checked_mul(g)?;
    }
    Some(n)
}

fn team_rewrites(k: &Kernel, team: Team) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    // A stencil's loop runs over its few taps (a warp would idle most lanes): StencilTile's case.
    if k.model()
        .and_then(|m| m.pattern())
        .is_some_and(|p| p.pattern == kernelpro_source::kernel_model::Pattern::Stencil)
    {
        return Vec::new();
    }
    if !split_pays(k, &u) {
        return Vec::new();
    }
    let body = k.body();
    let no_double_buffers = k.func.params.iter().all(|p| !p.base.contains("double"));
    let uses_double = k.text_of(body).contains("double");
    let mut out = Vec::new();
    let mut variants = vec![false];
    if no_double_buffers && uses_double {
        variants.insert(0, true);
    }
    for float_acc in variants {
        let Some((text, split)) = generate(k, &u, float_acc, team) else {
            return Vec::new();
        };
        let source = k.with_body(&text);
        let names = u.names().join(", ");
        let fp = if float_acc { ", double accumulators as float" } else { "" };
        let on = if text.contains("kp_m0") { ", online max and sum in one pass" } else { "" };
        let (who, tuning) = match team {
            Team::Warp => ("one warp per unit", Tuning::Warps),
            Team::Block => ("one block per unit", Tuning::Blocks),
            Team::Cluster => {
                out.extend(cluster_variants(k, &u, &source, split, &format!("{on}{fp}")));
                continue;
            }
        };
        let across = if team == Team::Warp {
            "lanes, shuffle all-reductions"
        } else {
            "the block's threads, shuffle and shared-memory all-reductions"
        };
        let note = format!("{who} ({names}): {split} loop(s) split across {across}{on}{fp}");
        out.extend(launch_variants(k, &Rewrite { source, note }, &u, tuning));
    }
    out
}

/// Thread-block cluster sizes tried: 8 is the largest every sm_90 part launches (portable).
const CLUSTER_SIZES: [u32; 3] = [2, 4, 8];

/// [`ClusterUnits`]' rewrites of `source` (the kernel's body as a cluster per unit): for each
/// cluster size, the kernel declared with `__cluster_dims__(C, 1, 1)` (as its expansion) under
/// each launch (the user's and the launch variants) whose grid's x is a multiple of C (the driver
/// refuses any other), `<cooperative_groups.h>` included where the file does not.
fn cluster_variants(k: &Kernel, u: &Units, source: &str, split: usize, also: &str) -> Vec<Rewrite> {
    let names = u.names().join(", ");
    // The head sits before the body: its offsets hold in the rewritten text.
    let name_at = k.func.name_byte;
    let mut out = Vec::new();
    for c in CLUSTER_SIZES {
        let mut text = source.to_string();
        // `__cluster_dims__(C, 1, 1)` as the toolkit's header expands it off Windows, which the
        // syntax tree reads (the macro it does not).
        text.insert_str(name_at, &format!("__attribute__((cluster_dims({c}, 1, 1))) "));
        let note = format!(
            "one cluster of {c} blocks per unit ({names}): {split} loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions{also} (sm_90; a launch whose grid is not a multiple of {c} blocks in x fails)"
        );
        let variants = launch_variants(k, &Rewrite { source: text, note }, u, Tuning::Clusters(c));
        let bounded = source[k.func.start_byte..name_at].contains("__launch_bounds__");
        // A spec launch the driver would refuse (the user's own, most often: a grid of 1) is no candidate.
        out.extend(variants.into_iter().filter_map(|mut rw| {
            let (threads, at) = cluster_launch_threads(&rw.source, &k.func.name, c)?;
            // The all-reductions keep many values live: without a bound, 1024 threads of them
            // exceed the SM's registers and the launch fails (LAUNCH_OUT_OF_RESOURCES, H100).
            if !bounded {
                rw.source.insert_str(at, &format!("__launch_bounds__({threads}) "));
            }
            if !rw.source.contains("<cooperative_groups.h>") {
                rw.source.insert_str(0, "#include <cooperative_groups.h>\n");
            }
            Some(rw)
        }));
    }
    out
}

/// The most threads a block has under the launches the spec of `kernel` in `source` may pick,
/// where every one's grid has an x that is a multiple of `c` (the driver refuses any other), and
/// where the kernel's name starts in `source` (the spec above it may have changed length).
fn cluster_launch_threads(source: &str, kernel: &str, c: u32) -> Option<(u32, usize)> {
    let k = Kernel::find(source, kernel)?;
    let launches = k.all_launches().or_else(|| k.launch().map(|l| vec![l]))?;
    if launches.is_empty() || launches.iter().any(|l| l.grid[0] % c != 0) {
        return None;
    }
    Some((launches.iter().map(|l| l.block.iter().product::<u32>()).max()?, k.func.name_byte))
}

/// [`BlockUnits`] with a thread-block cluster per unit (sm_90): for fewer units than SMs, whose
/// blocks alone would leave most SMs idle (layer norm over 16 rows of 4M floats as 16 blocks).
fn cluster_rewrites(k: &Kernel) -> Vec<Rewrite> {
    use kernelpro_source::kernel_model::Pattern;
    let rows = k
        .model()
        .and_then(|m| m.pattern())
        .is_some_and(|p| matches!(p.pattern, Pattern::RowReduction | Pattern::Contraction));
    let Some(u) = units(k).filter(|_| rows) else { return Vec::new() };
    // The cluster's index is the flat block index over its size: y and z kept by the units do not divide.
    if !u.fixed.is_empty() || unit_count(k, &u).is_none_or(|n| n >= super::launch::SMS as i64) {
        return Vec::new();
    }
    // Shared memory and barriers of the user's were a unit's own; cluster attributes are the user's.
    let head_and_body = &k.text[k.func.start_byte..k.func.end_byte];
    if ["__shared__", "__syncthreads", "cluster_dims", "cooperative_groups"].iter().any(|w| head_and_body.contains(w)) {
        return Vec::new();
    }
    team_rewrites(k, Team::Cluster)
}

/// [`BlockUnits`] with a thread-block cluster per unit, for fewer units than SMs.
pub struct ClusterUnits;

impl Recipe for ClusterUnits {
    fn name(&self) -> &'static str {
        "ClusterUnits"
    }
    fn min_sm(&self) -> u32 {
        90
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::RowReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::RowWalk, Code::OccupancyLimiter]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, cluster_rewrites)
    }
}

/// [`WarpUnits`] with a whole block per unit: for few, long units (a softmax over 128 rows of
/// 400k elements keeps 128 warps busy as warps, 128 blocks as blocks).
pub struct BlockUnits;

impl Recipe for BlockUnits {
    fn name(&self) -> &'static str {
        "BlockUnits"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::RowReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::RowWalk, Code::UncoalescedAccess, Code::Uncoalesced, Code::MemoryCoalescing, Code::OccupancyLimiter]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, block_rewrites)
    }
}

impl Recipe for WarpUnits {
    fn name(&self) -> &'static str {
        "WarpUnits"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[
            kernelpro_source::kernel_model::pattern::Pattern::RowReduction,
            kernelpro_source::kernel_model::pattern::Pattern::Gather,
        ]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::RowWalk, Code::UncoalescedAccess, Code::Uncoalesced, Code::MemoryCoalescing, Code::Fp64Promotion]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, rewrites)
    }
}
