//! The work units read from kernels in several styles, as data: each kernel's
//! indices (name, type, axis, bound), fixed block indices, head and per-unit
//! pieces, and the views of a file the reading goes through.

use super::recognize::{Piece, promote_fixed_y, units, whole_warps};
use super::{Kernel, Launch, Launches, views};
use expect_test::{Expect, expect};
use std::rc::Rc;

/// Launches given as data (the recipes resolve them from the spec).
struct Given(Vec<Launch>);

impl Launches for Given {
    fn first(&self) -> Option<Launch> {
        self.0.first().cloned()
    }
    fn all(&self) -> Option<Vec<Launch>> {
        Some(self.0.clone())
    }
}

fn launch(grid: [u32; 3], block: [u32; 3], ints: &[(&str, i64)]) -> Launch {
    Launch { grid, block, ints: ints.iter().map(|(n, v)| (n.to_string(), *v)).collect() }
}

/// `k`'s units, one line each: indices, fixed indices, head and body pieces; "none" when it has none.
fn describe(k: &Kernel) -> String {
    let Some(u) = units(k) else { return "none".to_string() };
    let mut out: Vec<String> =
        u.indices.iter().map(|i| format!("index {} {} {} < {}", i.name, i.ty, i.axis, i.bound)).collect();
    out.extend(u.fixed.iter().map(|(n, t, a)| format!("fixed {n} {t} {a}")));
    out.extend(u.head.iter().map(|h| format!("head {}", k.text_of(*h))));
    for p in &u.body {
        out.push(match p {
            Piece::Node(n) => format!("node {}", k.text_of(*n)),
            Piece::Skip(n, when) => format!("skip when {} is {when}", k.text_of(*n)),
            Piece::Derived(n) => format!("derived {}", k.text_of(*n)),
        });
    }
    out.join("\n")
}

fn check(body: &str, launches: Option<Vec<Launch>>, expected: Expect) {
    let text = format!("__global__ void k(float* y, const float* x, int n, int rows, int cols) {{\n{body}\n}}\n");
    let given = launches.map(|l| Rc::new(Given(l)) as Rc<dyn Launches>);
    let k = Kernel::find(&text, "k", given).expect("the kernel");
    expected.assert_eq(&describe(&k));
}

#[test]
fn units_in_several_styles() {
    // One index, an early return.
    check(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  y[i] = 2.0f * x[i];",
        None,
        expect![[r#"
            index i int x < n
            node y[i] = 2.0f * x[i];"#]],
    );
    // Casts, operand order, a wrapping guard, a uniform head declaration.
    check(
        "  long total = (long)rows * cols;\n  size_t i = threadIdx.x + (size_t)blockDim.x * blockIdx.x;\n  if (i < total && x[i] > 0) {\n    y[i] = x[i];\n  }",
        None,
        expect![[r#"
            index i size_t x < total
            head long total = (long)rows * cols;
            skip when x[i] > 0 is false
            node y[i] = x[i];"#]],
    );
    // Two indices: the one every store walks contiguously goes last.
    check(
        "  int r = blockIdx.y * blockDim.y + threadIdx.y;\n  int c = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r < rows && c < cols) y[r * cols + c] = x[c * rows + r];",
        None,
        expect![[r#"
            index r int y < rows
            index c int x < cols
            node y[r * cols + c] = x[c * rows + r];"#]],
    );
    // A grid-stride loop over the whole body.
    check(
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n    y[i] = x[i];\n  }",
        None,
        expect![[r#"
            index i int x < n
            node y[i] = x[i];"#]],
    );
    // A block index alone keeps the launch's y.
    check(
        "  int b = blockIdx.y;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= cols) return;\n  y[b * cols + i] = x[b * cols + i];",
        None,
        expect![[r#"
            index i int x < cols
            fixed b int y
            node y[b * cols + i] = x[b * cols + i];"#]],
    );
    // A unit body tied to the thread mapping is not one thread per unit.
    check(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  y[i] = x[threadIdx.x];",
        None,
        expect!["none"],
    );
}

#[test]
fn the_launches_decide_what_needs_them() {
    let text = "__global__ void k(float* y, const float* x, int rows, int cols) {\n  int r = blockIdx.y;\n  int c = blockIdx.x * blockDim.x + threadIdx.x;\n  if (c >= cols) return;\n  y[r * cols + c] = x[r * cols + c];\n}\n";
    let given = |block: [u32; 3]| {
        let l = vec![launch([4, 64, 1], block, &[("rows", 64), ("cols", 1000)])];
        Some(Rc::new(Given(l)) as Rc<dyn Launches>)
    };
    let k = Kernel::find(text, "k", given([256, 1, 1])).expect("the kernel");
    assert!(whole_warps(&k));
    let u = units(&k).expect("units");
    // The grid's y extent is `rows` under every launch: the fixed `r` becomes an index bounded by it.
    let p = promote_fixed_y(&k, &u).expect("promoted");
    let got: Vec<String> = p.indices.iter().map(|i| format!("{} {} < {}", i.name, i.axis, i.bound)).collect();
    assert_eq!(got, ["r y < rows", "c x < cols"]);
    assert!(p.fixed.is_empty());
    let k = Kernel::find(text, "k", given([48, 1, 1])).expect("the kernel");
    assert!(!whole_warps(&k));
    // Without launches nothing that needs them holds.
    let k = Kernel::find(text, "k", None).expect("the kernel");
    assert!(!whole_warps(&k));
    assert!(promote_fixed_y(&k, &units(&k).expect("units")).is_none());
}

/// The kernel's body in a view of `body`'s file, lines without trailing blanks ("none": the view
/// does not apply).
fn view(body: &str, f: fn(&Kernel) -> Option<String>) -> String {
    let text = format!(
        "#define AT(m, r, c) m[(r) * cols + (c)]\n__global__ void k(float* y, const float* x, int rows, int cols) {{\n{body}\n}}\n"
    );
    let k = Kernel::find(&text, "k", None).expect("the kernel");
    match f(&k) {
        Some(v) => {
            v.split_once("{\n").map_or(v.as_str(), |(_, b)| b).lines().map(|l| format!("{}\n", l.trim_end())).collect()
        }
        None => "none".to_string(),
    }
}

#[test]
fn views_of_the_file() {
    let flat = "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n  if (idx >= rows * cols) return;\n  int r = idx / cols, c = idx % cols;\n  y[idx] = x[c * rows + r];";
    expect![[r#"
          int c = blockIdx.x * blockDim.x + threadIdx.x;
          int r = blockIdx.y * blockDim.y + threadIdx.y;
          if (r >= rows || c >= cols) return;
  
          y[(r * (cols) + c)] = x[c * rows + r];
        }
    "#]]
    .assert_eq(&view(flat, views::split_flat));
    let pragma = "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float s = 0;\n#pragma unroll\n  for (int j = 0; j < cols; j++) s += x[i * cols + j];\n  y[i] = s;";
    expect![[r#"
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          float s = 0;

          for (int j = 0; j < cols; j++) s += x[i * cols + j];
          y[i] = s;
        }
    "#]]
    .assert_eq(&view(pragma, views::without_pragmas));
    let macros = "  int r = blockIdx.y * blockDim.y + threadIdx.y;\n  int c = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r < rows && c < cols) AT(y, r, c) = AT(x, r, c);";
    expect![[r#"
          int r = blockIdx.y * blockDim.y + threadIdx.y;
          int c = blockIdx.x * blockDim.x + threadIdx.x;
          if (r < rows && c < cols) ((y)[((r)) * cols + ((c))]) = ((x)[((r)) * cols + ((c))]);
        }
    "#]]
    .assert_eq(&view(macros, views::expand_macros));
    expect!["none"].assert_eq(&view(macros, views::split_flat));
}
