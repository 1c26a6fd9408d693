//! The kernel specialized to its launch's integer scalars. A naive kernel takes its sizes as
//! parameters (`k`, `stride`, `ow`), so its short loops run to a bound known only at run time and
//! every `%` and `/` by a size is a division routine (a 64-bit one where the index is `long`). Where
//! every launch the spec may pick gives such a parameter one value, the body runs a copy with the
//! value as a constant under a uniform test of the parameters (the compiler unrolls the loops and
//! turns the divisions into multiplies and shifts), and the code as written for any other value.
//! KernelBench 42's 4x4 max pool: 16 loads an output behind a loop on `k` and `o % ow`, `o / ow`
//! on a `long`.

use crate::kernel::Kernel;
use crate::structural::mentions;
use crate::syntax::{compact, descendants, edited_within};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{assigned_in, declared_in, strip_parens};
use tree_sitter::Node;

pub struct SpecializeScalars;

/// Integer parameter types a value can stand in for, as the parameter's base type.
const INTEGERS: [&str; 12] = [
    "int",
    "unsigned",
    "unsigned int",
    "long",
    "long long",
    "unsigned long",
    "unsigned long long",
    "size_t",
    "int32_t",
    "uint32_t",
    "int64_t",
    "short",
];

/// Whether `name` shapes the work where a constant helps: a loop's condition, or an operand of
/// `/`, `%`, `*` or a shift.
fn shapes_work(k: &Kernel, body: Node, name: &str) -> bool {
    descendants(body).into_iter().any(|d| {
        let named = |n: Node| mentions(k, n, name);
        match d.kind() {
            "for_statement" | "while_statement" => d.child_by_field_name("condition").is_some_and(named),
            "binary_expression" => {
                let op = d.child_by_field_name("operator").map(|o| k.text_of(o)).unwrap_or("");
                matches!(op, "/" | "%" | "*" | "<<" | ">>")
                    && [d.child_by_field_name("left"), d.child_by_field_name("right")].into_iter().flatten().any(|o| {
                        let o = strip_parens(o);
                        (o.kind() == "identifier" && k.text_of(o) == name)
                            || (o.kind() == "cast_expression" && named(o))
                    })
            }
            _ => false,
        }
    })
}

/// The parameters to specialize, with their one value: integers that the body reads and no
/// statement assigns or redeclares, that every launch gives the same value (in the type's range);
/// none unless one of them shapes the work.
fn chosen(k: &Kernel) -> Vec<(String, String, i64)> {
    let body = k.body();
    let assigned = assigned_in(k, body);
    let declared = declared_in(k, body);
    let mut out = Vec::new();
    for p in &k.func.params {
        if p.pointer || !INTEGERS.contains(&p.base.as_str()) {
            continue;
        }
        if assigned.contains(&p.name.as_str()) || declared.contains(&p.name) {
            continue;
        }
        let Some(values) = k.scalar_values(&p.name) else { continue };
        let v = values[0];
        let fits = match p.base.as_str() {
            "int" | "int32_t" => i32::try_from(v).is_ok(),
            "short" => i16::try_from(v).is_ok(),
            "unsigned" | "unsigned int" | "uint32_t" => u32::try_from(v).is_ok(),
            "unsigned long" | "unsigned long long" | "size_t" => v >= 0,
            _ => true,
        };
        let uses: Vec<Node> =
            descendants(body).into_iter().filter(|d| d.kind() == "identifier" && k.text_of(*d) == p.name).collect();
        // `&n` of a constant would not compile.
        let addressed = uses.iter().any(|u| {
            u.parent().is_some_and(|q| q.kind() == "pointer_expression" && k.text_of(q).trim_start().starts_with('&'))
        });
        let used = !uses.is_empty() && !addressed;
        if values.iter().any(|x| *x != v) || !fits || !used {
            continue;
        }
        out.push((p.name.clone(), p.base.clone(), v));
    }
    // Worth a second copy of the body only where a value shapes the work; then every value folds.
    if !out.iter().any(|(n, _, _)| shapes_work(k, body, n)) {
        out.clear();
    }
    out
}

fn rewrite(k: &Kernel) -> Option<Rewrite> {
    let body = k.body();
    // A copied label would be defined twice; a copied `__shared__` array would take its memory twice.
    let text = k.text_of(body);
    if text.contains("__shared__") || descendants(body).iter().any(|d| d.kind() == "labeled_statement") {
        return None;
    }
    let params = chosen(k);
    if params.is_empty() {
        return None;
    }
    let test = params.iter().map(|(n, _, v)| format!("{n} == {v}")).collect::<Vec<_>>().join(" && ");
    // Its own output keeps the parameters in the code as written, so it would apply again and
    // double the body each time (a greedy path of five on the H100 grew the text 32-fold and
    // the proposer took 57 s of a 45 s search): a body already under the test is left alone.
    let tested = |d: &Node| {
        d.kind() == "if_statement"
            && d.child_by_field_name("condition")
                .and_then(|c| c.child_by_field_name("value"))
                .is_some_and(|c| compact(k.text, c) == test.replace(' ', ""))
    };
    if descendants(body).iter().any(tested) {
        return None;
    }
    let constants = descendants(body).into_iter().filter(|d| d.kind() == "identifier").filter_map(|d| {
        let (_, ty, v) = params.iter().find(|(n, _, _)| k.text_of(d) == n)?;
        Some((d.byte_range(), format!("(({ty}){v})")))
    });
    let specialized = edited_within(k.text, body.byte_range(), constants);
    let inner = |b: &str| b[1..b.len() - 1].to_string();
    let values = params.iter().map(|(n, _, v)| format!("{n} = {v}")).collect::<Vec<_>>().join(", ");
    let new_body = format!(
        "{{\n  // The launch's {values} as constants (kernelpro SpecializeScalars): other values run the code as written.\n  if ({test}) {{{}}} else {{{}}}\n}}",
        inner(&specialized),
        inner(text)
    );
    Some(Rewrite {
        source: k.with_body(&new_body),
        note: format!("the kernel specialized to the launch's {values} (other values run it as written)"),
    })
}

impl Recipe for SpecializeScalars {
    fn name(&self) -> &'static str {
        "SpecializeScalars"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::WarpStall, Code::LaunchOverhead]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        rewrite(&k).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    const SPEC: &str = "// kernelpro: grid = 64\n// kernelpro: block = 256\n// kernelpro: y = out float[16384]\n\
                        // kernelpro: x = in float[16384] uniform(0, 1)\n// kernelpro: n = 16384\n\
                        // kernelpro: w = 128\n// kernelpro: k = 4\n";

    fn rewritten(kernel: &str) -> String {
        let text = format!("{SPEC}{kernel}");
        match SpecializeScalars.rewrite(&text, "pool").first() {
            Some(r) => format!("## {}\n{}", r.note, &r.source[r.source.find("__global__").unwrap()..]),
            None => "no rewrite".into(),
        }
    }

    /// A window loop on `k` and a row index by `% w`, `/ w`: specialized, and `n` with them.
    #[test]
    fn a_kernels_sizes_become_constants_under_a_test_of_their_values() {
        let got = rewritten(
            "__global__ void pool(float* y, const float* x, int n, int w, int k) {
  long o = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (o >= n) return;
  int c = o % w, r = o / w;
  float m = x[o];
  for (int j = 1; j < k; ++j) m = fmaxf(m, x[(r * w + (c + j) % w)]);
  y[o] = m;
}
",
        );
        expect![[r#"
            ## the kernel specialized to the launch's n = 16384, w = 128, k = 4 (other values run it as written)
            __global__ void pool(float* y, const float* x, int n, int w, int k) {
              // The launch's n = 16384, w = 128, k = 4 as constants (kernelpro SpecializeScalars): other values run the code as written.
              if (n == 16384 && w == 128 && k == 4) {
              long o = blockIdx.x * (long)blockDim.x + threadIdx.x;
              if (o >= ((int)16384)) return;
              int c = o % ((int)128), r = o / ((int)128);
              float m = x[o];
              for (int j = 1; j < ((int)4); ++j) m = fmaxf(m, x[(r * ((int)128) + (c + j) % ((int)128))]);
              y[o] = m;
            } else {
              long o = blockIdx.x * (long)blockDim.x + threadIdx.x;
              if (o >= n) return;
              int c = o % w, r = o / w;
              float m = x[o];
              for (int j = 1; j < k; ++j) m = fmaxf(m, x[(r * w + (c + j) % w)]);
              y[o] = m;
            }
            }
        "#]]
        .assert_eq(&got);
    }

    /// Its own output is not specialized again: the body would double with each application.
    #[test]
    fn a_specialized_body_is_left_alone() {
        let text = format!(
            "{SPEC}__global__ void pool(float* y, const float* x, int n, int w, int k) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int j = 0; j < k; ++j) y[i] = x[i % w];
}}
"
        );
        let once = SpecializeScalars.rewrite(&text, "pool");
        assert_eq!(once.len(), 1);
        assert!(SpecializeScalars.rewrite(&once[0].source, "pool").is_empty(), "{}", once[0].source);
    }

    /// A parameter assigned or redeclared in the body, one whose address is taken, one without a
    /// single launch value, and a body with a `__shared__` array are left alone.
    #[test]
    fn parameters_that_change_or_vary_are_kept() {
        let assigned = "__global__ void pool(float* y, const float* x, int n, int w, int k) {
  k = k + 1;
  int i = threadIdx.x;
  for (int j = 0; j < k; ++j) y[i] = x[i % w];
}
";
        assert!(rewritten(assigned).contains("launch's w = 128 (other"), "{}", rewritten(assigned));
        let shared = "__global__ void pool(float* y, const float* x, int n, int w, int k) {
  __shared__ float t[256];
  int i = threadIdx.x;
  for (int j = 0; j < k; ++j) y[i] = x[i % w];
}
";
        assert_eq!(rewritten(shared), "no rewrite");
        let addressed = shared.replace("__shared__ float t[256];", "int* kp = &w; (void)kp;");
        assert!(rewritten(&addressed).contains("launch's k = 4 (other"), "{}", rewritten(&addressed));
        let unknown = "__global__ void pool(float* y, const float* x, int n, int w, int q) {
  int i = threadIdx.x;
  for (int j = 0; j < q; ++j) y[i] = x[i];
}
";
        assert_eq!(rewritten(unknown), "no rewrite");
    }
}
