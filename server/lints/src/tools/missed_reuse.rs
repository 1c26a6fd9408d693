//! Neighbouring threads re-reading the same global data:
//! - a stencil or convolution: lane `l` reads `x[l + k]` over a loop `k` (or
//!   `x[i - 1]`, `x[i]`, `x[i + 1]`), so each element is loaded by several
//!   neighbouring threads;
//! - a dot-product loop without tiling: `acc += a[row * K + k] * b[k * N + col]`
//!   where one operand is the same for every lane of a warp (and the other for
//!   every row), so each element is fetched again by every thread that needs it.
//!
//! - a 2D window (a box blur, a pooling window): each thread reads a window of
//!   rows and columns around its output (`x[(y * s + i) * w + x * s + j]` over
//!   loops `i`, `j`, clamped bounds read at the interior), and the windows of
//!   neighbouring threads overlap along both axes, so each element is loaded by
//!   several threads of the block;
//!
//! - a reduction every thread recomputes: each lane along `threadIdx.x` walks
//!   the same row (`max(X[row * w + i])` over `i`) to produce its own element.
//!
//! Kernels that stage the array through shared memory are left alone.

use super::finding;
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::pattern::stencil_read;
use kernelpro_source::kernel_model::{Access, Atom, Dep, Dim, KernelModel, Loop, Poly, STRUCTURAL_VALUE, Space, Step};

pub struct MissedReuse;

const NAME: Code = Code::MissedReuse;

impl StaticTool for MissedReuse {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            let mut found: Vec<(&Access, String, String, String)> = Vec::new();
            let windows = windows(model);
            found.extend(stencils(model).into_iter().filter(|s| windows.iter().all(|w| w.0.base != s.0.base)));
            found.extend(windows);
            found.extend(contractions(model));
            found.extend(recomputed(model));
            found.sort_by_key(|f| f.0.line());
            for (a, message, evidence, guidance) in found {
                if !lines.first(&model.name, a.line()) {
                    continue;
                }
                findings.push(
                    finding(NAME, Severity::Warning, a.span, &model.name, message)
                        .with_evidence("overlap", evidence)
                        .with_guidance(guidance),
                );
            }
        }
        findings
    }
}

/// Global reads of `base` whose values a statement of the kernel stores into shared memory (already tiled).
fn staged(model: &KernelModel, base: &str) -> bool {
    model.accesses.iter().any(|r| {
        r.base == base
            && r.space == Space::Global
            && model.accesses.iter().any(|w| w.space == Space::Shared && !w.is_read() && w.statement == r.statement)
    })
}

fn reads(model: &KernelModel) -> impl Iterator<Item = &Access> {
    model.accesses.iter().filter(|a| {
        a.space == Space::Global
            && a.kind == kernelpro_source::kernel_model::AccessKind::Read
            && a.index.is_affine()
            && !a.is_irregular()
    })
}

const STENCIL_FIX: &str = "Load the block's elements plus the halo once into shared memory (a tile of blockDim.x + 2·radius elements, `__syncthreads()`), then compute every output from the tile.";

fn stencils(model: &KernelModel) -> Vec<(&Access, String, String, String)> {
    // The first stencil read of each array, by the model's one definition of a stencil.
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for a in reads(model) {
        if seen.contains(&a.base.as_str()) || staged(model, &a.base) {
            continue;
        }
        let Some(why) = stencil_read(model, a) else {
            continue;
        };
        seen.push(&a.base);
        out.push((
            a,
            format!("`{}`: neighbouring threads read overlapping elements of `{}`, so each element is loaded from global memory by several threads ({why})", a.text, a.base),
            why,
            STENCIL_FIX.to_string(),
        ));
    }
    out
}

/// Each input element is read by at least this many threads on average before a 2D window is a finding.
const WINDOW_REUSE: i64 = 2;

const WINDOW_FIX: &str = "Stage the window's input in a shared tile with a halo: each block loads its outputs' rows and columns plus the window's border into shared memory once (`__syncthreads()`), then every thread reads its window from the tile.";

/// How many iterations a window's loop makes: a constant, or a size given at run time.
#[derive(Clone, Copy)]
enum Taps {
    Known(i64),
    Runtime,
}

fn taps(l: &Loop) -> Option<Taps> {
    let Step::Add(step) = &l.step else { return None };
    let step = step.as_constant().filter(|s| *s > 0)?;
    let span = l.bound.as_ref()?.sub(l.init.as_ref().unwrap_or(&Poly::zero()));
    match span.as_constant() {
        Some(d) => Some(Taps::Known((d + step - 1) / step)),
        None if span.dep() == Dep::Uniform => Some(Taps::Runtime),
        None => None,
    }
}

/// Along a thread axis whose index coefficient is `thread`: a loop of the read whose
/// coefficient is `thread / s` for a small `s` (the window's stride), with its taps.
fn window_axis<'a>(model: &'a KernelModel, a: &'a Access, thread: &Poly) -> Option<(&'a Loop, i64, Taps)> {
    if thread.is_zero() {
        return None;
    }
    model.loops_of(a).filter(|l| !l.grid_stride && !l.block_stride).find_map(|l| {
        let c = a.index.coefficient(l.atom.as_ref()?);
        if c.is_zero() {
            return None;
        }
        let s = (1..=STRUCTURAL_VALUE)
            .find(|s| c.mul(&Poly::constant(*s)) == *thread || c.mul(&Poly::constant(-*s)) == *thread)?;
        Some((l, s, taps(l)?))
    })
}

/// 2D windows: a read whose index moves with a loop along threadIdx.x and with
/// another along threadIdx.y, windows that overlap between neighbouring threads
/// so each element is read by [`WINDOW_REUSE`] threads or more.
fn windows(model: &KernelModel) -> Vec<(&Access, String, String, String)> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for a in reads(model) {
        if seen.contains(&a.base.as_str()) || staged(model, &a.base) {
            continue;
        }
        let Some((lx, sx, tx)) = window_axis(model, a, &a.lane_coefficient()) else { continue };
        let Some((ly, sy, ty)) = window_axis(model, a, &a.index.coefficient(&Atom::Tid(Dim::Y))) else { continue };
        if std::ptr::eq(lx, ly) {
            continue;
        }
        let reuse = match (tx, ty) {
            (Taps::Known(x), Taps::Known(y)) if x * y < WINDOW_REUSE * sx * sy => continue,
            (Taps::Known(x), Taps::Known(y)) => format!("about {:.1}", (x * y) as f64 / (sx * sy) as f64),
            _ => "several".to_string(),
        };
        let var = |l: &Loop| l.var.clone().unwrap_or_else(|| "?".into());
        seen.push(&a.base);
        out.push((
            a,
            format!(
                "`{}`: a window of {} read straight from global memory; the windows of neighbouring threads overlap, so each element of `{}` is loaded by {reuse} threads of the block",
                a.text,
                match (ty, tx) {
                    (Taps::Known(y), Taps::Known(x)) => format!("{y}×{x} elements"),
                    _ => "a size given at run time".to_string(),
                },
                a.base
            ),
            format!(
                "rows move with `{}` and threadIdx.y (stride {sy}), columns with `{}` and threadIdx.x (stride {sx}): {reuse} reads of each element",
                var(ly),
                var(lx)
            ),
            WINDOW_FIX.to_string(),
        ));
    }
    out
}

fn contractions(model: &KernelModel) -> Vec<(&Access, String, String, String)> {
    let mut out = Vec::new();
    for a in reads(model).filter(|a| a.in_product && a.accumulated) {
        if staged(model, &a.base) {
            continue;
        }
        for l in model.loops_of(a) {
            let Some(atom) = &l.atom else { continue };
            if a.index.coefficient(atom).is_zero() {
                continue;
            }
            // The same element for every lane along threadIdx.x…
            if !a.lane_coefficient().is_zero() {
                continue;
            }
            // …multiplied by an operand that differs between lanes, in the same statement.
            let Some(b) = reads(model).find(|b| {
                b.statement == a.statement
                    && b.base != a.base
                    && b.in_product
                    && !b.index.coefficient(atom).is_zero()
                    && !b.lane_coefficient().is_zero()
            }) else {
                continue;
            };
            let var = l.var.as_deref().unwrap_or("?");
            out.push((
                a,
                format!(
                    "dot-product loop over `{var}` without tiling: the lanes along threadIdx.x all read the same `{}` and each reads its own `{}`, so every element of `{}` and `{}` is fetched again by each thread that uses it",
                    a.text, b.text, a.base, b.base
                ),
                format!("`{}` is the same for all lanes; `{}` differs by {} elements between lanes", a.text, b.text, b.lane_coefficient()),
                "Tile the contraction: load blocks of both operands into shared memory (e.g. 32×32 tiles, `__syncthreads()` between loading and using them) so each element comes from global memory once per block, and let each thread compute several outputs (register blocking); for 16-bit inputs use tensor cores (CUTLASS/CuTe, cuBLAS).".to_string(),
            ));
            break;
        }
    }
    out
}

/// A row reduction that every lane along `threadIdx.x` repeats: an accumulated
/// read walking a long loop with the same address for all those lanes, in a
/// kernel whose lanes write different elements.
fn recomputed(model: &KernelModel) -> Vec<(&Access, String, String, String)> {
    let lanes_write_apart =
        model.accesses.iter().any(|w| w.space == Space::Global && !w.is_read() && !w.lane_coefficient().is_zero());
    if !model.is_kernel || !lanes_write_apart {
        return Vec::new();
    }
    let mut out = Vec::new();
    for a in reads(model)
        .filter(|a| a.accumulated && !a.in_product && a.lane_coefficient().is_zero() && !staged(model, &a.base))
    {
        let walked = model.loops_of(a).find(|l| {
            !l.grid_stride
                && l.bound.as_ref().is_none_or(|b| b.as_constant().is_none_or(|k| k.abs() > 32))
                && l.atom.as_ref().is_some_and(|k| !a.index.coefficient(k).is_zero())
        });
        let Some(l) = walked else { continue };
        let var = l.var.as_deref().unwrap_or("?");
        out.push((
            a,
            format!(
                "`{}`: every lane along threadIdx.x reads the same elements over `{var}` and reduces them again, though each writes its own output: the reduction is recomputed by every thread of the row",
                a.text
            ),
            format!("`{}` does not depend on threadIdx.x; the loop over `{var}` walks it", a.text),
            "Reduce each row once (a warp or block per row with `__shfl_xor_sync`, or a separate pass into a per-row buffer), then let the threads of the row read the result.".to_string(),
        ));
        break;
    }
    out
}
