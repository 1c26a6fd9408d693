//! The kernel model: what each thread of a kernel touches. For every kernel,
//! the thread-index values and what derives from them, its loops, every
//! global/shared/per-thread access with its index as a polynomial in the lane,
//! other thread indices, loop counters and uniform values, which branch
//! conditions depend on the thread and how, and the launch where the file or
//! the caller says it. Lints, recipes and the optimizer read this instead of
//! walking syntax trees themselves.
//!
//! Unknown stays unknown: a value the model cannot see through is an opaque
//! atom that keeps only how it varies across threads; a template element type
//! has no size; a launch nobody states is `None`.

mod eval;
pub mod lanes;
mod launch;
mod macros;
pub mod pattern;
pub mod poly;
mod render;
pub mod types;

pub use lanes::{WarpGeometry, bank_conflict_ways, sectors_per_request};
pub use macros::Macros;
pub use pattern::{Pattern, Recognised};
pub use poly::{Atom, Dep, Dim, Poly};
pub use types::ElemType;

use crate::SourceFile;
use kernelpro_model::Span;
use serde::Serialize;

/// Where an access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// Through a pointer parameter (or a pointer derived from one).
    Global,
    /// A `__shared__` array.
    Shared,
    /// A per-thread array (`float acc[8]`).
    Local,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Read,
    Write,
    /// `p[i] += v`, `p[i]++`
    ReadWrite,
    /// `atomicAdd`, `atomicMax`, `atomicCAS`, …: the function's name.
    Atomic(String),
}

/// One load, store or atomic in the kernel's body.
#[derive(Debug, Clone, Serialize)]
pub struct Access {
    pub span: Span,
    /// The access as written (`row[c]`, `atomicAdd(&out[0], v)`).
    pub text: String,
    pub space: Space,
    /// The array or pointer parameter the address is based on (`x` for `row[c]` with `row = x + r * C`).
    pub base: String,
    pub kind: AccessKind,
    /// The address as an offset from `base` in elements of `elem`.
    pub index: Poly,
    pub elem: ElemType,
    /// Enclosing loops, innermost last (indices into [`KernelModel::loops`]).
    pub loops: Vec<usize>,
    /// Enclosing branch conditions, innermost last (indices into [`KernelModel::branches`]).
    pub branches: Vec<usize>,
    /// The statement it belongs to (accesses of one statement share it).
    pub statement: usize,
    /// Under a `*` with another operand (a product of loads: a dot product's term).
    pub in_product: bool,
    /// Read into an accumulation (`acc += …`, `acc = acc + …`).
    pub accumulated: bool,
}

impl Access {
    pub fn line(&self) -> u32 {
        self.span.start.line
    }
    pub fn is_read(&self) -> bool {
        matches!(self.kind, AccessKind::Read | AccessKind::ReadWrite)
    }
    pub fn is_atomic(&self) -> bool {
        matches!(self.kind, AccessKind::Atomic(_))
    }
    /// What neighbouring lanes' indices differ by along `threadIdx.x` (and the lane id), in elements.
    pub fn lane_coefficient(&self) -> Poly {
        self.index.coefficient(&Atom::Tid(Dim::X)).add(&self.index.coefficient(&Atom::Lane))
    }
    /// The index is data-dependent across threads (`x[idx[i]]`).
    pub fn is_irregular(&self) -> bool {
        self.index.data_dependent()
    }
}

/// How a loop's counter moves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Step {
    /// `i += s` (`i++` is `Add(1)`, `i -= s` is `Add(-s)`).
    Add(Poly),
    /// `i *= k`, `i <<= k`, `i /= k`, `i >>= k`: the operator and operand as written.
    Scale(String),
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopKind {
    For,
    While,
    Do,
}

#[derive(Debug, Clone, Serialize)]
pub struct Loop {
    pub kind: LoopKind,
    /// The loop's header (`for (…)`, `while (…)`) line span.
    pub span: Span,
    /// The counter, when one is recognised.
    pub var: Option<String>,
    /// The counter's first value.
    pub init: Option<Poly>,
    /// The condition as written.
    pub condition: String,
    /// `E` of `i < E` / `i <= E` / `i != E`, when the condition compares the counter.
    pub bound: Option<Poly>,
    pub step: Step,
    /// The atom the counter's value is expressed in (see [`Atom::Loop`]).
    pub atom: Option<Atom>,
    /// Starts at the global thread index and steps by the grid's thread count (`blockDim * gridDim`).
    pub grid_stride: bool,
    /// Starts at a lane-varying value and steps by the block size (a block-stride loop).
    pub block_stride: bool,
    /// The enclosing loop.
    pub parent: Option<usize>,
    /// This loop's branch entry (its condition), in [`KernelModel::branches`].
    pub branch: usize,
}

/// How a branch condition varies across the threads of a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchKind {
    /// Block-uniform: every thread goes the same way.
    Uniform,
    /// Depends only on values uniform within a warp (`warp_id == 0`).
    WarpUniform,
    /// A thread value against a uniform bound (`i < n`, `tid < 32`, `tid < s`): splits at most one warp.
    Bound,
    /// A thread value equal to a uniform one (`tid == 0`, `lane == 0`): one thread does the work.
    SingleThread,
    /// A modulo or bit pattern of a lane-varying value (`tid % (2 * s) == 0`, `tid & 1`): splits every warp.
    LaneModulo { modulus: String },
    /// Depends on loaded data (`if (x[i] > 0)`).
    DataDependent,
    /// Thread-dependent in another way.
    Thread,
}

impl BranchKind {
    /// Whether threads of one block may disagree (a barrier under it is unsafe).
    pub fn splits_block(&self) -> bool {
        *self != BranchKind::Uniform
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchSource {
    If,
    /// `if (c) return;` (or `continue`): the rest of the block runs under the condition's negation.
    EarlyExit,
    Ternary,
    Loop,
    Switch,
}

#[derive(Debug, Clone, Serialize)]
pub struct Branch {
    /// The condition expression.
    pub span: Span,
    pub condition: String,
    pub kind: BranchKind,
    pub source: BranchSource,
}

/// A per-thread array (`float acc[8]`): registers if every index is known at compile time, else local memory.
#[derive(Debug, Clone, Serialize)]
pub struct LocalArray {
    pub name: String,
    pub elem: ElemType,
    /// Dimensions, outermost first; `None` where not a constant.
    pub dims: Vec<Option<i64>>,
    pub span: Span,
}

/// A `__shared__` array.
#[derive(Debug, Clone, Serialize)]
pub struct SharedArray {
    pub name: String,
    pub elem: ElemType,
    /// Dimensions, outermost first; `None` where not a constant (`extern __shared__ float s[]`).
    pub dims: Vec<Option<i64>>,
    pub span: Span,
    /// Declared at file scope (shared by every kernel of the file).
    pub file_scope: bool,
}

/// A `__syncthreads()`-like barrier and the branches around it.
#[derive(Debug, Clone, Serialize)]
pub struct Barrier {
    pub span: Span,
    pub text: String,
    pub branches: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchSource {
    /// Given by the caller (a launch spec).
    Spec,
    /// A `kernel<<<grid, block>>>` site in the same file with a constant block.
    LaunchSite,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Launch {
    /// Threads per block in x, y, z.
    pub block: Option<[u32; 3]>,
    pub source: Option<LaunchSource>,
    /// `__launch_bounds__(N)`: at most N threads per block (not the shape).
    pub max_threads: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelModel {
    pub name: String,
    /// A `__global__` function (else a `__device__` one, modelled with uniform parameters).
    pub is_kernel: bool,
    pub name_span: Span,
    pub launch: Launch,
    /// Named values of the body whose value depends on the thread (for hover and tools): `name = poly`.
    pub thread_values: Vec<(String, Poly)>,
    pub loops: Vec<Loop>,
    pub branches: Vec<Branch>,
    pub accesses: Vec<Access>,
    pub shared: Vec<SharedArray>,
    pub local_arrays: Vec<LocalArray>,
    pub barriers: Vec<Barrier>,
}

impl KernelModel {
    /// The warp's thread layout this kernel runs with, from the launch.
    pub fn geometry(&self) -> WarpGeometry {
        WarpGeometry::new(self.launch.block)
    }
    /// Every loop enclosing `access` (innermost last).
    pub fn loops_of<'a>(&'a self, access: &'a Access) -> impl DoubleEndedIterator<Item = &'a Loop> {
        access.loops.iter().map(|&i| &self.loops[i])
    }
    /// Every branch enclosing `access` (innermost last).
    pub fn branches_of<'a>(&'a self, access: &'a Access) -> impl Iterator<Item = &'a Branch> {
        access.branches.iter().map(|&i| &self.branches[i])
    }
    /// The kernel's parallel pattern (map, row reduction, contraction, …), when a rule recognises it.
    pub fn pattern(&self) -> Option<Recognised> {
        pattern::recognise(self)
    }
    /// The compact text form the unit tests snapshot.
    pub fn render(&self) -> String {
        render::render(self)
    }

    /// The model under a launch spec's scalar arguments: every uniform symbol
    /// the spec gives a value of at most [`STRUCTURAL_VALUE`] (a kernel size, a
    /// stride, a dilation) becomes that constant, so `x[(oy * stride + i) * w +
    /// ox * stride + j]` with `stride = 1` is a coalesced read and `for (i < ks)`
    /// with `ks = 3` a three-tap loop. Larger values (problem sizes) stay
    /// symbolic: they decide no access pattern, and findings name them.
    pub fn specialize(&mut self, values: &[(String, i64)]) {
        let small: Vec<&(String, i64)> = values.iter().filter(|(_, v)| v.abs() <= STRUCTURAL_VALUE).collect();
        if small.is_empty() {
            return;
        }
        let value = |a: &Atom| match a {
            Atom::Sym(s) => small.iter().find(|(n, _)| n == s).map(|(_, v)| Poly::constant(*v)),
            _ => None,
        };
        for a in &mut self.accesses {
            a.index = a.index.substitute(value);
        }
        for l in &mut self.loops {
            l.bound = l.bound.as_ref().map(|b| b.substitute(value));
            l.init = l.init.as_ref().map(|b| b.substitute(value));
            if let Step::Add(step) = &mut l.step {
                *step = step.substitute(value);
            }
        }
        for (_, v) in &mut self.thread_values {
            *v = v.substitute(value);
        }
    }
}

/// Spec values up to this size are taken as structural constants by [`KernelModel::specialize`].
pub const STRUCTURAL_VALUE: i64 = 16;

/// The model of every kernel (and device function) in `text`. `block` gives a kernel's launch block
/// (a launch spec's) when the caller knows it; in-file launch sites are used otherwise.
///
/// The model reads the file's canonical form ([`crate::canonical`]): brace and
/// parenthesis initialisers, `auto`, `constexpr`, pointer walks and index
/// helpers in the plain style, on the same lines as written.
pub fn model_file(text: &str, source: &SourceFile, block: &dyn Fn(&str) -> Option<[u32; 3]>) -> Vec<KernelModel> {
    let canonical = crate::canonical::file(text);
    let reparsed;
    let (text, source) = match &canonical {
        Some(c) => {
            reparsed = crate::parse(c);
            (c.as_str(), &reparsed)
        }
        None => (text, source),
    };
    let Some(tree) = crate::parse_tree(text) else {
        return Vec::new();
    };
    let macros = macros::Macros::collect(&tree, text);
    let sites = launch::launch_sites(&tree, text, &macros);
    source
        .functions
        .iter()
        .filter(|f| f.kind != crate::FnKind::Host)
        .filter_map(|kernel| {
            let mut launch = launch::launch_of(kernel, &tree, text, &sites, &macros);
            if let Some(b) = block(&kernel.name) {
                launch.block = Some(b);
                launch.source = Some(LaunchSource::Spec);
            }
            eval::model_kernel(kernel, &source.functions, &tree, text, &macros, launch)
        })
        .collect()
}

/// The model of one kernel by name.
pub fn model_kernel(text: &str, source: &SourceFile, name: &str, block: Option<[u32; 3]>) -> Option<KernelModel> {
    model_file(text, source, &|k| if k == name { block } else { None }).into_iter().find(|m| m.name == name)
}
