//! [`BlockScan`]: a Kogge–Stone (Hillis–Steele) inclusive scan of a block's
//! shared array (`for (s = 1; s < LIMIT; s *= 2) { sync; if (tid >= s) t =
//! S[tid] + S[tid - s]; sync; if (tid >= s) S[tid] = t; }`) takes two block
//! barriers per step, log2(block) steps. Its expert form scans each warp's 32
//! elements with `__shfl_up_sync` (no barrier), then one warp scans the warp
//! totals, and every thread adds the totals of the warps before its own: three
//! barriers in all, the same `S[tid]` (the block's inclusive prefix) after it.
//! The loads before the loop and the stores after it are the user's, kept.
//! It applies where every launch the spec allows is a 1D block of whole warps
//! no larger than the loop's limit and the shared array, so the original
//! scanned the whole block too.

use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, indent_at, statements};
use crate::why_not::NotApplicable;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::strip_parens;
use tree_sitter::Node;

pub struct BlockScan;

/// Element types `__shfl_up_sync` takes.
const SHUFFLED: &[&str] = &["float", "double", "int", "unsigned", "unsigned int", "long long", "unsigned long long"];

fn no(reason: impl Into<String>) -> NotApplicable {
    NotApplicable::new(reason)
}

/// The Kogge–Stone loop found: the loop node, the shared array, its element type and the loop's limit.
struct Scan<'t> {
    the_loop: Node<'t>,
    shared: String,
    ty: String,
    limit: String,
}

/// `__syncthreads();`
fn is_sync(k: &Kernel, st: Node) -> bool {
    st.kind() == "expression_statement" && compact(k.text, st) == "__syncthreads();"
}

/// The integer value of `e`: a literal, `1 << n`, or a `#define NAME value` of the file.
fn value_of(k: &Kernel, e: &str) -> Option<i64> {
    let e = e.trim().trim_start_matches('(').trim_end_matches(')').trim();
    if let Ok(v) = e.trim_end_matches(['u', 'U', 'l', 'L']).parse::<i64>() {
        return Some(v);
    }
    if let Some((a, b)) = e.split_once("<<") {
        return Some(value_of(k, a)? << value_of(k, b)?);
    }
    if !e.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    k.text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define")?.trim_start();
        let v = rest.strip_prefix(e)?;
        v.starts_with([' ', '\t']).then(|| value_of(k, v))?
    })
}

/// `if (TID >= s) BODY` (or `s <= TID`) with no else: BODY as a single statement.
fn guarded<'t>(k: &Kernel, st: Node<'t>, tid: &[String], s: &str) -> Option<Node<'t>> {
    if st.kind() != "if_statement" || st.child_by_field_name("alternative").is_some() {
        return None;
    }
    let c = strip_parens(st.child_by_field_name("condition")?.named_child(0)?);
    let (l, op, r) = (
        c.child_by_field_name("left")?,
        k.text_of(c.child_by_field_name("operator")?),
        c.child_by_field_name("right")?,
    );
    let (l, r) = (compact(k.text, l), compact(k.text, r));
    let ok = (op == ">=" && tid.contains(&l) && r == s) || (op == "<=" && l == s && tid.contains(&r));
    ok.then(|| crate::syntax::single_statement(st.child_by_field_name("consequence")?))?
}

/// `L = R;` or `L += R;`: (L, operator, R) compacted.
fn assign(k: &Kernel, st: Node) -> Option<(String, String, String)> {
    let e = strip_parens(st.named_child(0).filter(|_| st.kind() == "expression_statement")?);
    if e.kind() != "assignment_expression" {
        return None;
    }
    Some((
        compact(k.text, e.child_by_field_name("left")?),
        k.text_of(e.child_by_field_name("operator")?).to_string(),
        compact(k.text, e.child_by_field_name("right")?),
    ))
}

/// The step of a doubling loop over `s` starting at 1: `s *= 2`, `s <<= 1`, `s = s * 2`, `s += s`.
fn doubles(k: &Kernel, f: Node, s: &str) -> bool {
    f.child_by_field_name("update").is_some_and(|u| {
        let u = compact(k.text, u);
        [format!("{s}*=2"), format!("{s}<<=1"), format!("{s}={s}*2"), format!("{s}={s}<<1"), format!("{s}+={s}")]
            .contains(&u)
    })
}

fn find<'t>(k: &'t Kernel<'t>) -> Result<Scan<'t>, NotApplicable> {
    let model = k.model().ok_or_else(|| no("the kernel model does not read this kernel"))?;
    let top = statements(k.body());
    // The thread's index in its block: `threadIdx.x` or a name declared as it and never changed.
    let mut tid = vec!["threadIdx.x".to_string()];
    for st in &top {
        if st.kind() == "declaration"
            && let Some(d) = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")
            && d.child_by_field_name("value").is_some_and(|v| compact(k.text, v) == "threadIdx.x")
            && let Some(n) = d.child_by_field_name("declarator")
        {
            let name = k.text_of(n).to_string();
            if !super::window::written(k, k.body(), &name) {
                tid.push(name);
            }
        }
    }
    let mut last = Err(no("no loop doubling a stride from 1 scans a shared array at the body's top level"));
    for (at, f) in top.iter().enumerate().filter(|(_, f)| f.kind() == "for_statement") {
        match scan_loop(k, *f, &tid, &model) {
            Ok(scan) => {
                if top[..at].iter().any(|st| descendants(*st).iter().any(|d| d.kind() == "return_statement")) {
                    return Err(no("a thread may return before the block's scan"));
                }
                return Ok(scan);
            }
            Err(e) => last = Err(e),
        }
    }
    last
}

fn scan_loop<'t>(
    k: &Kernel,
    f: Node<'t>,
    tid: &[String],
    model: &kernelpro_source::kernel_model::KernelModel,
) -> Result<Scan<'t>, NotApplicable> {
    let not = || {
        no(
            "the loop is not a Kogge–Stone scan step (`if (tid >= s) t = S[tid] + S[tid - s]; sync; if (tid >= s) S[tid] = t;`)",
        )
    };
    let init = f.child_by_field_name("initializer").filter(|i| i.kind() == "declaration").ok_or_else(not)?;
    let d = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator").ok_or_else(not)?;
    let s = k.text_of(d.child_by_field_name("declarator").ok_or_else(not)?).to_string();
    if d.child_by_field_name("value").map(|v| compact(k.text, v)).as_deref() != Some("1") || !doubles(k, f, &s) {
        return Err(not());
    }
    let cond = strip_parens(f.child_by_field_name("condition").ok_or_else(not)?);
    if cond.kind() != "binary_expression"
        || cond.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("<")
        || cond.child_by_field_name("left").map(|l| compact(k.text, l)) != Some(s.clone())
    {
        return Err(not());
    }
    let limit = k.text_of(cond.child_by_field_name("right").ok_or_else(not)?).to_string();
    let body = f.child_by_field_name("body").ok_or_else(not)?;
    let sts = statements(body);
    // The statements between barriers: declarations of the step's value, its read, then its write.
    let syncs: Vec<usize> = (0..sts.len()).filter(|i| is_sync(k, sts[*i])).collect();
    let rest: Vec<Node> = sts.iter().copied().filter(|st| !is_sync(k, *st)).collect();
    let (decls, work): (Vec<Node>, Vec<Node>) = rest.iter().partition(|st| st.kind() == "declaration");
    let [read, write] = work[..] else { return Err(not()) };
    let (ri, wi) = (sts.iter().position(|n| *n == read).unwrap(), sts.iter().position(|n| *n == write).unwrap());
    // A barrier between the read and the write, and one between the write and the next step's read.
    if !syncs.iter().any(|s| (ri..wi).contains(s)) || syncs.len() < 2 {
        return Err(no("the scan's steps are not separated by barriers"));
    }
    let (read, write) = (guarded(k, read, tid, &s).ok_or_else(not)?, guarded(k, write, tid, &s).ok_or_else(not)?);
    let (t, rop, rv) = assign(k, read).ok_or_else(not)?;
    let (target, wop, wv) = assign(k, write).ok_or_else(not)?;
    // The shared array S, read at `tid` and `tid - s`, written at `tid`.
    let shared = model
        .shared
        .iter()
        .find(|a| tid.iter().any(|i| target == format!("{}[{i}]", a.name)))
        .ok_or_else(|| no("the step's write is not to a shared array at the thread's index"))?;
    let name = &shared.name;
    let at = |i: &String| format!("{name}[{i}]");
    let back = |i: &String| format!("{name}[{i}-{s}]");
    let sum = tid.iter().any(|i| rv == format!("{}+{}", at(i), back(i)) || rv == format!("{}+{}", back(i), at(i)));
    let neighbour = tid.iter().any(|i| rv == back(i));
    let ok = rop == "="
        && ((sum && wop == "=" && wv == t)
            || (neighbour
                && ((wop == "+=" && wv == t)
                    || (wop == "="
                        && tid.iter().any(|i| wv == format!("{}+{t}", at(i)) || wv == format!("{t}+{}", at(i)))))));
    if !ok || !t.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(not());
    }
    // The step's value is the loop's own: declared in it, or declared outside and used nowhere else.
    if !decls.iter().all(|d| {
        compact(k.text, *d)
            .starts_with(&format!("{}{t}", k.text_of(d.child_by_field_name("type").unwrap()).replace(' ', "")))
    }) {
        return Err(not());
    }
    let outside = descendants(k.body())
        .into_iter()
        .filter(|n| n.kind() == "identifier" && k.text_of(*n) == t)
        .filter(|n| !(f.start_byte()..f.end_byte()).contains(&n.start_byte()))
        .filter(|n| n.parent().is_none_or(|p| p.kind() != "declaration" && p.kind() != "init_declarator"))
        .count();
    if outside > 0 {
        return Err(no(format!("`{t}` is read after the scan")));
    }
    let ty = shared.elem.name.clone();
    if !SHUFFLED.contains(&ty.as_str()) {
        return Err(no(format!("the shared array's elements (`{ty}`) are not a type warp shuffles take")));
    }
    // Every launch: a 1D block of whole warps the loop's limit and the array cover.
    let launches = k.all_launches().ok_or_else(|| no("no launch spec gives the block size"))?;
    // The array's length as the model reads it, else from its declaration (`__shared__ float S[BLOCK];`).
    let dim = shared.dims.first().copied().flatten().or_else(|| {
        let open = format!("{}[", shared.name);
        let line = k.text.lines().find(|l| l.contains("__shared__") && l.contains(&open))?;
        let len = line.split_once(&open)?.1.split_once(']')?.0;
        value_of(k, len)
    });
    for l in &launches {
        let [bx, by, bz] = l.block;
        let covered = limit.replace(' ', "") == "blockDim.x" || value_of(k, &limit).is_some_and(|v| v >= bx as i64);
        if by != 1 || bz != 1 || bx % 32 != 0 || !covered || dim.is_none_or(|d| d < bx as i64) {
            return Err(no(format!(
                "a launch's block ({bx}, {by}, {bz}) is not a 1D block of whole warps that `{limit}` and `{name}` cover"
            )));
        }
    }
    Ok(Scan { the_loop: f, shared: name.clone(), ty, limit })
}

fn generate(k: &Kernel, scan: &Scan) -> String {
    let ind = indent_at(k.text, scan.the_loop.start_byte());
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let (s, ty) = (&scan.shared, &scan.ty);
    let shfl = |v: &str, i: &str| {
        format!(
            "{i}for (int kp_o = 1; kp_o < 32; kp_o <<= 1) {{\n{i}  const {ty} kp_n = __shfl_up_sync(0xffffffffu, {v}, kp_o);\n{i}  if (kp_lane >= (unsigned)kp_o) {v} += kp_n;\n{i}}}\n"
        )
    };
    format!(
        "{{\n{ind2}// The block's inclusive scan of {s}: each warp's 32 elements by shuffles, then the warp totals by one warp (kernelpro BlockScan).\n\
         {ind2}__shared__ {ty} kp_warp_total[32];\n\
         {ind2}__syncthreads();\n\
         {ind2}const unsigned kp_lane = threadIdx.x & 31u, kp_warp = threadIdx.x >> 5;\n\
         {ind2}{ty} kp_v = {s}[threadIdx.x];\n\
         {v_scan}\
         {ind2}if (kp_lane == 31u) kp_warp_total[kp_warp] = kp_v;\n\
         {ind2}__syncthreads();\n\
         {ind2}if (kp_warp == 0u) {{\n\
         {ind3}const unsigned kp_warps = blockDim.x >> 5;\n\
         {ind3}{ty} kp_s = kp_lane < kp_warps ? kp_warp_total[kp_lane] : ({ty})0;\n\
         {s_scan}\
         {ind3}if (kp_lane < kp_warps) kp_warp_total[kp_lane] = kp_s;\n\
         {ind2}}}\n\
         {ind2}__syncthreads();\n\
         {ind2}if (kp_warp > 0u) kp_v += kp_warp_total[kp_warp - 1u];\n\
         {ind2}{s}[threadIdx.x] = kp_v;\n\
         {ind2}__syncthreads();\n\
         {ind}}}",
        v_scan = shfl("kp_v", &ind2),
        s_scan = shfl("kp_s", &ind3),
    )
}

fn attempt(k: &Kernel) -> Result<Vec<Rewrite>, NotApplicable> {
    let scan = find(k)?;
    let mut source = k.text.to_string();
    source.replace_range(scan.the_loop.byte_range(), &generate(k, &scan));
    let note = format!(
        "Kogge–Stone scan of {} (strides up to {}) as warp shuffles and one scan of the warp totals",
        scan.shared, scan.limit
    );
    Ok(vec![Rewrite { source, note }])
}

impl Recipe for BlockScan {
    fn name(&self) -> &'static str {
        "BlockScan"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::BarrierStall, Code::WarpStall, Code::SharedBankConflict]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let canonical = kernelpro_source::canonical::kernel(text, kernel);
        let text = canonical.as_deref().unwrap_or(text);
        Kernel::find(text, kernel).map(|k| attempt(&k).unwrap_or_default()).unwrap_or_default()
    }
    fn not_applicable(&self, text: &str, kernel: &str) -> NotApplicable {
        let canonical = kernelpro_source::canonical::kernel(text, kernel);
        let text = canonical.as_deref().unwrap_or(text);
        match Kernel::find(text, kernel).map(|k| attempt(&k)) {
            Some(Err(e)) => e,
            Some(Ok(_)) => no("it applies"),
            None => no("the kernel has no body"),
        }
    }
}
