//! Detection from the loop structure of a naive matrix product: one thread
//! per output, `row`/`col` from blockIdx·blockDim+threadIdx on y/x, a guard
//! `row < M && col < N` (or an early return), and
//! `for (k < K) acc += A[row*K+k] * B[k*N+col]; C[row*N+col] = acc;`
//! with either operand column-major, conversions around the loads and the
//! store, and `C = alpha*acc + beta*C` for float C. The kernel body must hold
//! nothing else, so that replacing it cannot drop other work.

use crate::kernel::KernelInfo;
use crate::shape::{Dim, Elem, GemmShape, Major, Scale};
use kernelpro_source::syntax::compact;
use tree_sitter::Node;

pub(crate) fn detect(text: &str, k: &KernelInfo) -> Option<GemmShape> {
    let tree = kernelpro_source::parse_tree(text)?;
    let (start, _) = k.func.body_bytes?;
    let mut body = tree.root_node().descendant_for_byte_range(start, start + 1)?;
    while body.kind() != "compound_statement" || body.start_byte() != start {
        body = body.parent()?;
    }
    let stmts: Vec<String> = statements(body).into_iter().map(|n| compact(text, n)).collect();
    let (row, col, rest) = index_decls(&stmts)?;
    let (m, n, inner) = guarded(&row, &col, rest)?;
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

/// The statements of a block (or the single statement a body is).
fn statements(node: Node) -> Vec<Node> {
    if node.kind() != "compound_statement" {
        return vec![node];
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

fn is_zero(v: &str) -> bool {
    ["0", "0.f", "0.0f", "0.0", "0.", "0.0F", "0.F", "0.0f"].contains(&v)
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

/// `blockIdx.A*blockDim.A+threadIdx.A` in the orders people write it.
fn global_index(axis: &str) -> [String; 4] {
    affine(&format!("blockIdx.{axis}"), &format!("blockDim.{axis}"), &format!("threadIdx.{axis}"))
}

/// The two leading declarations `int row = <y index>; int col = <x index>;` (either order).
fn index_decls(stmts: &[String]) -> Option<(String, String, &[String])> {
    let decl = |s: &str, axis: &str| -> Option<String> {
        let s = s.strip_prefix("const").unwrap_or(s);
        let s = ["int", "unsignedint", "unsigned", "size_t"].iter().find_map(|t| s.strip_prefix(t))?;
        let s = s.strip_prefix("const").unwrap_or(s);
        let (name, value) = s.strip_suffix(';')?.split_once('=')?;
        global_index(axis).contains(&value.to_string()).then(|| name.to_string())
    };
    let (first, second) = (stmts.first()?, stmts.get(1)?);
    let (row, col) = match (decl(first, "y"), decl(second, "x")) {
        (Some(r), Some(c)) => (r, c),
        _ => (decl(second, "y")?, decl(first, "x")?),
    };
    Some((row, col, &stmts[2..]))
}

/// The statements under the bounds guard, and the M and N it checks against.
fn guarded(row: &str, col: &str, rest: &[String]) -> Option<(String, String, Vec<String>)> {
    let [first, tail @ ..] = rest else {
        return None;
    };
    let bounds = |cond: &str, op: &str, join: &str| -> Option<(String, String)> {
        let (l, r) = cond.split_once(join)?;
        let (l, r) = if l.starts_with(&format!("{row}{op}")) { (l, r) } else { (r, l) };
        Some((l.strip_prefix(&format!("{row}{op}"))?.to_string(), r.strip_prefix(&format!("{col}{op}"))?.to_string()))
    };
    if let Some(cond) = first.strip_prefix("if(").and_then(|s| s.strip_suffix(")return;")) {
        let (m, n) = bounds(cond, ">=", "||")?;
        return Some((m, n, tail.to_vec()));
    }
    if !tail.is_empty() {
        return None;
    }
    let inner = first.strip_prefix("if(")?;
    let close = matching_paren(inner)?;
    let (m, n) = bounds(&inner[..close], "<", "&&")?;
    let block = inner[close + 1..].strip_prefix('{')?.strip_suffix('}')?;
    Some((m, n, split_statements(block)?))
}

/// Byte offset of the `)` that closes an already-open `(`.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Compacted block text split into its statements: `;` at depth 0, or a `for(...)` with its body.
fn split_statements(block: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in block.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ';' if depth == 0 => {
                out.push(block[start..=i].to_string());
                start = i + 1;
            }
            _ => {}
        }
        if c == '}' && depth == 0 {
            out.push(block[start..=i].to_string());
            start = i + 1;
        }
    }
    (start == block.len()).then_some(out)
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
