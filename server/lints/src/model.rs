//! The kernel models of a lint input (built once per tool run from the
//! source crate's model) and the wording the model-based tools share.

use crate::LintInput;
use kernelpro_source::kernel_model::{Access, Atom, Dim, ElemType, KernelModel, Poly, WarpGeometry, model_file};
use std::cell::RefCell;
use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// The models of the input's kernels. Every model tool asks for them, so the
/// last file's models are kept (per thread), keyed by the text and each
/// kernel's launch block: a parse of a large file costs milliseconds.
pub fn models(input: &LintInput) -> Rc<Vec<KernelModel>> {
    let mut hasher = DefaultHasher::new();
    input.text.hash(&mut hasher);
    for f in &input.source.functions {
        (f.name.as_str(), (input.block_dims)(&f.name), (input.spec_values)(&f.name)).hash(&mut hasher);
    }
    let key = hasher.finish();
    LAST.with(|last| {
        if let Some((k, models)) = &*last.borrow()
            && *k == key
        {
            return models.clone();
        }
        let mut models = model_file(input.text, input.source, input.block_dims);
        for m in &mut models {
            m.specialize(&(input.spec_values)(&m.name));
        }
        let models = Rc::new(models);
        *last.borrow_mut() = Some((key, models.clone()));
        models
    })
}

thread_local! {
    static LAST: RefCell<Option<(u64, Rc<Vec<KernelModel>>)>> = const { RefCell::new(None) };
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
        Some([x, y, _]) if g.lanes_span_rows() => {
            format!(" (blocks of {x}×{y}: a warp spans {} rows of threadIdx.y)", (32 / x.max(1)).min(y))
        }
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
    if lane.is_zero() { a.index.coefficient(&Atom::Tid(Dim::Y)) } else { lane }
}
