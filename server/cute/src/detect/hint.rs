//! Detection from the spec's `// kernelpro: op = gemm M N K [layout]` hint.
//!
//! M, N and K are spec expressions. A and B are the first two `in` buffers,
//! C the first buffer the kernel writes; scalar parameters named `alpha` and
//! `beta` make it `C = alpha·A·B + beta·C`. The layout word is `row` or `col`
//! (all three matrices), or `A,B` / `A,B,C` with each `row` or `col` (C
//! defaults to row-major); without it everything is row-major.

use crate::kernel::KernelInfo;
use crate::shape::{Dim, Elem, GemmShape, Major, Scale};
use kernelpro_spec::{Arg, Dir, ElemType, Scope};

pub(crate) fn detect(k: &KernelInfo) -> Option<GemmShape> {
    let launch = k.launch.as_ref()?;
    let mut words = launch.op.as_deref()?.split_whitespace();
    if words.next()? != "gemm" {
        return None;
    }
    let mut scope = Scope::default();
    for (name, value) in &launch.lets {
        scope.set(name, *value);
    }
    let mut dim = || -> Option<Dim> { size(k, &scope, words.next()?) };
    let (m, n, kk) = (dim()?, dim()?, dim()?);
    let [a_layout, b_layout, c_layout] = layouts(words.next())?;
    if words.next().is_some() {
        return None;
    }
    let buffers: Vec<_> =
        launch.args.iter().filter_map(|a| if let Arg::Buffer(b) = a { Some(b) } else { None }).collect();
    let mut inputs = buffers.iter().filter(|b| b.dir == Dir::In);
    let (a, b) = (inputs.next()?, inputs.next()?);
    let c = buffers.iter().find(|b| b.dir.is_output())?;
    let fits = |count: u64, rows: &Dim, cols: &Dim| count as i64 >= rows.value.unwrap_or(0) * cols.value.unwrap_or(0);
    if !(fits(a.count, &m, &kk) && fits(b.count, &kk, &n) && fits(c.count, &m, &n)) {
        return None;
    }
    let scalar = |name: &str| k.param(name).filter(|p| !p.pointer).map(|p| p.name.clone());
    let alpha_beta = match (scalar("alpha"), scalar("beta")) {
        (Some(alpha), Some(beta)) => Some(Scale { alpha, beta }),
        _ => None,
    };
    Some(GemmShape {
        m,
        n,
        k: kk,
        a: a.name.clone(),
        b: b.name.clone(),
        c: c.name.clone(),
        a_type: elem(a.elem)?,
        b_type: elem(b.elem)?,
        c_type: elem(c.elem)?,
        a_layout,
        b_layout,
        c_layout,
        alpha_beta,
    })
}

/// A size word of the hint as a C expression: the integer parameter it names
/// or whose spec binding it is, else its value as a literal.
fn size(k: &KernelInfo, scope: &Scope, word: &str) -> Option<Dim> {
    if k.int_param(word) {
        return Some(Dim { expr: word.to_string(), value: k.scalar_value(word) });
    }
    let value = kernelpro_spec::eval(word, scope).ok()?;
    let bound = k.func.params.iter().find(|p| k.int_param(&p.name) && k.binding(&p.name) == Some(word));
    Some(Dim { expr: bound.map_or_else(|| value.to_string(), |p| p.name.clone()), value: Some(value) })
}

fn layouts(word: Option<&str>) -> Option<[Major; 3]> {
    let major = |w: &str| match w {
        "row" => Some(Major::Row),
        "col" => Some(Major::Col),
        _ => None,
    };
    let Some(word) = word else {
        return Some([Major::Row; 3]);
    };
    let parts: Vec<Major> = word.split(',').map(major).collect::<Option<_>>()?;
    match parts[..] {
        [all] => Some([all; 3]),
        [a, b] => Some([a, b, Major::Row]),
        [a, b, c] => Some([a, b, c]),
        _ => None,
    }
}

fn elem(e: ElemType) -> Option<Elem> {
    match e {
        ElemType::Float => Some(Elem::Float),
        ElemType::Half => Some(Elem::Half),
        ElemType::Bfloat16 => Some(Elem::Bf16),
        _ => None,
    }
}
