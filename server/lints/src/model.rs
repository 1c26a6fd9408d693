//! The kernel models of a lint input (built once per tool run from the
//! source crate's model) and the wording the model-based tools share.

use crate::LintInput;
use kernelpro_source::kernel_model::{
    Access, Atom, Dim, ElemType, KernelModel, Poly, WarpGeometry, model_file,
};
use std::collections::HashSet;

pub fn models(input: &LintInput) -> Vec<KernelModel> {
    model_file(input.text, input.source, input.block_dims)
}

/// `floats`, `doubles`, … for a stride message.
pub fn elements(elem: &ElemType) -> String {
    match elem.name.as_str() {
        "float" => "floats".into(),
        "double" => "doubles".into(),
        "half" | "__half" => "halves".into(),
        "int" | "unsigned" | "unsigned int" => "ints".into(),
        name if elem.bytes.is_some() => format!("{name}s"),
        _ => "elements".into(),
    }
}

/// `3 floats` or `` `C` floats `` (a symbolic stride is quoted as code).
pub fn stride(coef: &Poly, elem: &ElemType) -> String {
    match coef.as_constant() {
        Some(k) => format!("{} {}", k.abs(), elements(elem)),
        None => format!("`{coef}` {}", elements(elem)),
    }
}

/// ` (blocks of 16×16: a warp spans 2 rows of threadIdx.y)` when lanes span rows.
pub fn geometry_note(g: &WarpGeometry) -> String {
    match g.block {
        Some([x, y, _]) if g.lanes_span_rows() => format!(
            " (blocks of {x}×{y}: a warp spans {} rows of threadIdx.y)",
            (32 / x.max(1)).min(y)
        ),
        _ => String::new(),
    }
}

/// One finding per kernel, line and tool: `first(kernel, line)` is true once.
#[derive(Default)]
pub struct Lines(HashSet<(String, u32)>);

impl Lines {
    pub fn first(&mut self, kernel: &str, line: u32) -> bool {
        self.0.insert((kernel.to_string(), line))
    }
}

/// What neighbouring lanes' indices differ by: along threadIdx.x, or along
/// threadIdx.y when x does not move the index (lanes spanning rows, or a (1, N) block).
pub fn lane_step(a: &Access) -> Poly {
    let lane = a.lane_coefficient();
    if lane.is_zero() {
        a.index.coefficient(&Atom::Tid(Dim::Y))
    } else {
        lane
    }
}
