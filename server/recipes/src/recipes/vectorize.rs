//! Elementwise kernels `if (i < n) y[i] = f(x[i], ...)` over a global index
//! `i`: four elements per thread with `float4` loads and stores in a
//! grid-stride loop, then a scalar tail, so any launch stays correct.

use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct VectorizeLoads;

const GLOBAL_INDEX: [&str; 4] = [
    "blockIdx.x*blockDim.x+threadIdx.x",
    "blockDim.x*blockIdx.x+threadIdx.x",
    "threadIdx.x+blockIdx.x*blockDim.x",
    "threadIdx.x+blockDim.x*blockIdx.x",
];
const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// The matched kernel: `i`, the bound `n`, the output `y`, the element expression and the pointers it loads.
struct Elementwise<'t> {
    index: String,
    bound: String,
    out: String,
    expr: Node<'t>,
    inputs: Vec<String>,
    guard: Node<'t>,
}

fn float_pointer(k: &Kernel, name: &str) -> bool {
    k.param(name).is_some_and(|p| p.pointer && p.base == "float")
}

fn matches<'t>(k: &'t Kernel) -> Option<Elementwise<'t>> {
    let text = k.text;
    let [decl, guard] = statements(k.body())[..] else { return None };
    let init = decl.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let index = k.text_of(init.child_by_field_name("declarator")?).to_string();
    if !GLOBAL_INDEX.contains(&compact(text, init.child_by_field_name("value")?).as_str())
        || guard.kind() != "if_statement"
        || guard.child_by_field_name("alternative").is_some()
    {
        return None;
    }
    let cond = guard.child_by_field_name("condition")?.child_by_field_name("value")?;
    let (left, right) = (cond.child_by_field_name("left")?, cond.child_by_field_name("right")?);
    let bound = k.text_of(right).to_string();
    if k.text_of(cond.child_by_field_name("operator")?) != "<"
        || k.text_of(left) != index
        || k.param(&bound).is_none_or(|p| p.pointer)
    {
        return None;
    }
    let stmt = single_statement(guard.child_by_field_name("consequence")?)?;
    let assign =
        stmt.named_child(0).filter(|a| stmt.kind() == "expression_statement" && a.kind() == "assignment_expression")?;
    let target = assign.child_by_field_name("left")?;
    let out = k.text_of(target.child_by_field_name("argument")?).to_string();
    if k.text_of(assign.child_by_field_name("operator")?) != "="
        || compact(text, target) != format!("{out}[{index}]")
        || !float_pointer(k, &out)
    {
        return None;
    }
    let expr = assign.child_by_field_name("right")?;
    let mut inputs = Vec::new();
    for n in descendants(expr) {
        match n.kind() {
            "subscript_expression" => {
                let p = k.text_of(n.child_by_field_name("argument")?).to_string();
                if compact(text, n) != format!("{p}[{index}]") || !float_pointer(k, &p) {
                    return None;
                }
                if !inputs.contains(&p) {
                    inputs.push(p);
                }
            }
            "identifier"
                if k.text_of(n) == index && n.parent().is_none_or(|p| p.kind() != "subscript_argument_list") =>
            {
                return None;
            }
            _ => {}
        }
    }
    Some(Elementwise { index, bound, out, expr, inputs, guard })
}

/// The element expression with each `p[i]` replaced by `load(p)`.
fn substitute(k: &Kernel, m: &Elementwise, load: impl Fn(&str) -> String) -> String {
    let mut s = String::new();
    let mut at = m.expr.start_byte();
    for n in descendants(m.expr).into_iter().filter(|n| n.kind() == "subscript_expression") {
        let p = n.child_by_field_name("argument").map_or("", |a| k.text_of(a));
        s.push_str(&k.text[at..n.start_byte()]);
        s.push_str(&load(p));
        at = n.end_byte();
    }
    s.push_str(&k.text[at..m.expr.end_byte()]);
    s
}

impl Recipe for VectorizeLoads {
    fn name(&self) -> &'static str {
        "VectorizeLoads"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::Vectorization, Code::HighDRAMThroughput, Code::MemoryCoalescing, Code::ScalarLoads]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let Some(m) = matches(&k) else { return Vec::new() };
        let (i, n, y) = (&m.index, &m.bound, &m.out);
        let ind = indent_at(text, m.guard.start_byte());
        let stride = "gridDim.x * blockDim.x";
        let aligned = crate::access::aligned_16(m.inputs.iter().map(String::as_str).chain([y.as_str()]));
        let mut body = format!("const int kp_n4 = {aligned} ? {n} / 4 : 0;\n{ind}");
        body += &format!("for (int kp_v = {i}; kp_v < kp_n4; kp_v += {stride}) {{\n");
        for p in &m.inputs {
            body += &format!("{ind}  const float4 kp_{p} = reinterpret_cast<const float4*>({p})[kp_v];\n");
        }
        body += &format!("{ind}  float4 kp_out;\n");
        for lane in LANES {
            body += &format!("{ind}  kp_out.{lane} = {};\n", substitute(&k, &m, |p| format!("kp_{p}.{lane}")));
        }
        body += &format!("{ind}  reinterpret_cast<float4*>({y})[kp_v] = kp_out;\n{ind}}}\n");
        body += &format!(
            "{ind}for (int kp_t = kp_n4 * 4 + {i}; kp_t < {n}; kp_t += {stride}) {y}[kp_t] = {};",
            substitute(&k, &m, |p| format!("{p}[kp_t]"))
        );
        let mut source = text.to_string();
        source.replace_range(m.guard.byte_range(), &body);
        vec![Rewrite {
            source,
            note: format!(
                "float4 loads of {} and stores of {y} where aligned, grid-stride with a scalar tail",
                m.inputs.join(", ")
            ),
        }]
    }
}
