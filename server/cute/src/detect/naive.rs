//! Detection from the loop structure of a naive matrix product: one thread
//! per output, `row`/`col` from blockIdx·blockDim+threadIdx on y/x, a guard
//! `row < M && col < N` (or an early return), and
//! `for (k < K) acc += A[row*K+k] * B[k*N+col]; C[row*N+col] = acc;`
//! with either operand column-major, conversions around the loads and the
//! store, and `C = alpha*acc + beta*C` for float C. The kernel body must hold
//! nothing else, so that replacing it cannot drop other work. The indices, the
//! guard and the unit's statements are the work units of `source::units`, the
//! reading the structural recipes share.

use crate::kernel::KernelInfo;
use crate::shape::{Dim, Elem, GemmShape, Major, Scale};
use kernelpro_source::syntax::compact;

pub(crate) fn detect(text: &str, k: &KernelInfo) -> Option<GemmShape> {
    let (row, col, m, n, inner) = units_reading(text, k)?;
    let [acc_decl, loop_, store] = &inner[..] else {
        return None;
    };
    let acc =
        acc_decl.strip_prefix("float")?.strip_suffix(";")?.split_once('=').filter(|(_, v)| is_zero(v))?.0.to_string();
    let (kdim, a, a_layout, b, b_layout) = product_loop(loop_, &acc, &row, &col, &m, &n)?;
    let (c, c_layout, alpha_beta) = store_of(store, &acc, &row, &col, &m, &n)?;
    let elem_of = |name: &str| k.param(name).filter(|p| p.pointer).and_then(|p| Elem::from_c(&p.base));
    let dim = |name: &str| k.int_param(name).then(|| Dim { expr: name.to_string(), value: k.scalar_value(name) });
    let c_type = elem_of(&c)?;
    if alpha_beta.is_some() && c_type != Elem::Float {
        return None;
    }
    Some(GemmShape {
        m: dim(&m)?,
        n: dim(&n)?,
        k: dim(&kdim)?,
        a_type: elem_of(&a)?,
        b_type: elem_of(&b)?,
        c_type,
        a,
        b,
        c,
        a_layout,
        b_layout,
        c_layout,
        alpha_beta,
    })
}

fn is_zero(v: &str) -> bool {
    ["0", "0.f", "0.0f", "0.0", "0.", "0.0F", "0.F", "0.0f"].contains(&v)
}

/// The kernel's work units as `source::units` reads them (any spelling of the
/// indices and the guard): the `row` (y) and `col` (x) indices, their bounds and
/// the unit's statements, compacted; none when the body holds anything else.
fn units_reading(text: &str, k: &KernelInfo) -> Option<(String, String, String, String, Vec<String>)> {
    let uk = kernelpro_source::units::Kernel::find(text, &k.func.name, None)?;
    let u = kernelpro_source::units::recognize::units(&uk)?;
    if !u.head.is_empty() || !u.fixed.is_empty() {
        return None;
    }
    let [r, c] = &u.indices[..] else { return None };
    if r.axis != 'y' || c.axis != 'x' {
        return None;
    }
    let inner = u.only_nodes()?.iter().map(|n| compact(text, *n)).collect();
    let bare = |b: &str| b.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    Some((r.name.clone(), c.name.clone(), bare(&r.bound), bare(&c.bound), inner))
}

/// `o*s+i` in the orders people write it.
fn affine(outer: &str, stride: &str, inner: &str) -> [String; 4] {
    [
        format!("{outer}*{stride}+{inner}"),
        format!("{stride}*{outer}+{inner}"),
        format!("{inner}+{outer}*{stride}"),
        format!("{inner}+{stride}*{outer}"),
    ]
}

/// `for(int k=0;k<K;++k) acc += A[..] * B[..];` → (K, A, A's layout, B, B's layout).
fn product_loop(
    s: &str,
    acc: &str,
    row: &str,
    col: &str,
    m: &str,
    n: &str,
) -> Option<(String, String, Major, String, Major)> {
    let s = s.strip_prefix("for(int")?;
    let (kv, s) = s.split_once("=0;")?;
    let (kdim, s) = s.strip_prefix(&format!("{kv}<"))?.split_once(';')?;
    let s = [format!("++{kv})"), format!("{kv}++)"), format!("{kv}+=1)")]
        .iter()
        .find_map(|p| s.strip_prefix(p.as_str()))?;
    let s = s.strip_prefix('{').and_then(|b| b.strip_suffix('}')).unwrap_or(s);
    let product = s.strip_prefix(&format!("{acc}+="))?.strip_suffix(';')?;
    let (x, y) = split_product(product)?;
    let (a, a_idx) = load(x)?;
    let (b, b_idx) = load(y)?;
    let a_layout = layout_of(&a_idx, (row, kdim, kv), (kv, m, row))?;
    let b_layout = layout_of(&b_idx, (kv, n, col), (col, kdim, kv))?;
    Some((kdim.to_string(), a, a_layout, b, b_layout))
}

/// Row-major when the index is `r*s+c` of `row_form`, column-major for `col_form`.
fn layout_of(idx: &str, row_form: (&str, &str, &str), col_form: (&str, &str, &str)) -> Option<Major> {
    let is = |(o, s, i): (&str, &str, &str)| affine(o, s, i).iter().any(|f| f == idx);
    if is(row_form) {
        Some(Major::Row)
    } else if is(col_form) {
        Some(Major::Col)
    } else {
        None
    }
}

/// `x*y` at the top level (outside brackets and parentheses).
fn split_product(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0;
    let mut at = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '*' if depth == 0 => {
                if at.is_some() {
                    return None;
                }
                at = Some(i);
            }
            _ => {}
        }
    }
    let i = at?;
    Some((&s[..i], &s[i + 1..]))
}

/// `NAME[IDX]` inside the conversions to float people write → (NAME, IDX).
fn load(s: &str) -> Option<(String, String)> {
    const CALLS: [&str; 4] = ["float(", "static_cast<float>(", "__half2float(", "__bfloat162float("];
    let s = CALLS.iter().find_map(|c| s.strip_prefix(c)?.strip_suffix(')')).unwrap_or(s);
    let s = s.strip_prefix("(float)").unwrap_or(s);
    let s = s.strip_prefix('(').and_then(|x| x.strip_suffix(')')).unwrap_or(s);
    let (name, idx) = s.strip_suffix(']')?.split_once('[')?;
    let ident = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    ident.then(|| (name.to_string(), idx.to_string()))
}

/// `C[idx] = acc;` (maybe converted) or `C[idx] = alpha*acc + beta*C[idx];`.
fn store_of(s: &str, acc: &str, row: &str, col: &str, m: &str, n: &str) -> Option<(String, Major, Option<Scale>)> {
    let (target, value) = s.strip_suffix(';')?.split_once('=')?;
    let (c, idx) = load(target)?;
    let layout = layout_of(&idx, (row, n, col), (col, m, row))?;
    const CONVERSIONS: [&str; 4] = ["__float2half", "__float2half_rn", "__float2bfloat16", "__float2bfloat16_rn"];
    let converted = value == acc || CONVERSIONS.iter().any(|f| value == format!("{f}({acc})"));
    if converted {
        return Some((c, layout, None));
    }
    let (scaled, old) = value.split_once('+')?;
    let (alpha, a) = scaled.split_once('*')?;
    let (beta, old) = old.split_once('*')?;
    (a == acc && old == target && ident(alpha) && ident(beta))
        .then(|| (c, layout, Some(Scale { alpha: alpha.to_string(), beta: beta.to_string() })))
}

fn ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}
