//! `CuteGemm`: replaces a detected matrix product's body with a call to a
//! generated CuTe GEMM, placed (with its includes) directly above the
//! kernel's spec block, and a `__launch_bounds__` qualifier when the
//! kernel has none. It applies when the spec resolves, the block has 128 or
//! 256 threads, and the known sizes are multiples of the tile (other sizes
//! would only reach the generated kernel's slow per-element path).
//!
//! Two rewrites for 16-bit inputs: one keeps the parameters, the spec and the
//! launch; the other also rewrites the spec's `grid`, `block` and `smem` for
//! the warp-specialized kernel, which stays correct under the old launch.

use crate::detect_gemm;
use crate::generate::{CuteKernel, NewLaunch, cute_gemm_kernel, helper_name, launch_changing_gemm};
use crate::kernel::KernelInfo;
use crate::shape::{Dim, GemmShape};
use kernelpro_model::Code;
use kernelpro_recipes::{Recipe, Rewrite};

pub struct CuteGemmRecipe;

/// Sizes the fast path needs M and N (and K, at most) to be multiples of.
const TILE_MN: i64 = 128;
const TILE_K_MAX: i64 = 32;

impl Recipe for CuteGemmRecipe {
    fn name(&self) -> &'static str {
        "CuteGemm"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Contraction]
    }
    fn tier(&self) -> kernelpro_recipes::Tier {
        kernelpro_recipes::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::TensorCore, Code::SharedMemTiling]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let (Some(shape), Some(k)) = (detect_gemm(text, kernel), KernelInfo::find(text, kernel)) else {
            return Vec::new();
        };
        let Some(launch) = &k.launch else {
            return Vec::new();
        };
        if text.contains(&format!("{}(", helper_name(kernel))) {
            // Already rewritten: its hint still reads as a GEMM, but a second copy would not compile.
            return Vec::new();
        }
        if !launch.tunables.is_empty() {
            // A tune value may change the block the tiling was written for.
            return Vec::new();
        }
        if !fits(&shape, TILE_MN, TILE_MN, TILE_K_MAX) {
            return Vec::new();
        }
        let threads = launch.block.iter().product();
        let Ok(keeping) = cute_gemm_kernel(&shape, kernel, &k.func.params, threads) else {
            return Vec::new();
        };
        // The user's own bound stays; it may not allow the new block either.
        let bounded =
            kernelpro_source::parse_tree(text).is_some_and(|t| kernelpro_source::launch::bounds(&t, &k.func).is_some());
        let mut rewrites =
            vec![Rewrite { source: assemble(text, &k, &keeping, bounded, Vec::new()), note: keeping.note }];
        if let Ok(changing) = launch_changing_gemm(&shape, kernel, &k.func.params, threads)
            && let Some(new) = &changing.launch
            && !bounded
            && fits(&shape, new.tile_m, new.tile_n, new.tile_k)
        {
            let edits = launch_lines(text, &k, &shape, new);
            rewrites.push(Rewrite { source: assemble(text, &k, &changing, bounded, edits), note: changing.note });
        }
        rewrites
    }
}

/// Whether the known sizes are positive multiples of the tile.
fn fits(shape: &GemmShape, m: i64, n: i64, k: i64) -> bool {
    let multiple = |d: &Dim, of: i64| d.value.is_some_and(|v| v > 0 && v % of == 0);
    multiple(&shape.m, m) && multiple(&shape.n, n) && multiple(&shape.k, k)
}

/// A spec line's replacement: (0-based line, byte range within it, new text);
/// an empty range inserts a whole line before `line`.
type LineEdit = (u32, std::ops::Range<usize>, String);

/// The spec edits for `new`: `grid` (one block a tile), `block` and `smem`
/// rewritten in place, `smem` added after `block` when the spec has none.
fn launch_lines(text: &str, k: &KernelInfo, shape: &GemmShape, new: &NewLaunch) -> Vec<LineEdit> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let grid = format!(
        "grid = ceil_div({}, {}) * ceil_div({}, {})",
        spec_expr(k, &shape.m),
        new.tile_m,
        spec_expr(k, &shape.n),
        new.tile_n
    );
    let block = format!("block = {}", new.threads);
    let smem = format!("smem = {}", new.smem);
    let mut edits = Vec::new();
    let (mut has_smem, mut block_line) = (false, None);
    for l in &k.spec_lines {
        let new_text = match kernelpro_spec::launch_part(&l.text) {
            Some("grid") => &grid,
            Some("block") => {
                block_line = Some(l);
                &block
            }
            Some("smem") => {
                has_smem = true;
                &smem
            }
            _ => continue,
        };
        let col = l.col as usize;
        edits.push((l.line, col..col + l.text.len(), new_text.clone()));
    }
    if !has_smem && let Some(b) = block_line {
        // The `block` line's comment prefix, with `smem` in place of its directive.
        let line = lines[b.line as usize];
        let prefix = &line[..b.col as usize];
        edits.push((b.line + 1, 0..0, format!("{prefix}{smem}\n")));
    }
    edits
}

/// `dim` as the spec can say it: the expression its kernel parameter is bound
/// to (`N = S` gives `S`), a literal as it is, else its value.
fn spec_expr(k: &KernelInfo, dim: &Dim) -> String {
    if dim.expr.parse::<i64>().is_ok() {
        return dim.expr.clone();
    }
    match k.binding(&dim.expr) {
        Some(rhs) if rhs.chars().all(|c| c.is_alphanumeric() || c == '_') => rhs.to_string(),
        Some(rhs) => format!("({rhs})"),
        None => dim.value.map_or(dim.expr.clone(), |v| v.to_string()),
    }
}

/// The file with `cute`'s helpers above the kernel's spec block, its bound on
/// the declaration (unless the user wrote one: `bounded`), its body, and
/// `spec` edits applied.
fn assemble(text: &str, k: &KernelInfo, cute: &CuteKernel, bounded: bool, spec: Vec<LineEdit>) -> String {
    let (body_start, body_end) = k.func.body_bytes.expect("KernelInfo::find checks the body");
    let line_start = |line: u32| -> usize { text.split_inclusive('\n').take(line as usize).map(str::len).sum() };
    let first_line = k.spec_lines.first().map_or(k.func.span.start.line, |l| l.line);
    let insert_at = line_start(first_line);
    // Spec edits are above the declaration: apply them to the head, last first.
    let head = kernelpro_source::syntax::edited(
        &text[insert_at..k.func.start_byte],
        spec.into_iter().map(|(line, range, new)| {
            let at = line_start(line) - insert_at;
            (at + range.start..at + range.end, new)
        }),
    );
    let mut source = String::with_capacity(text.len() + cute.helpers.len() + cute.body.len());
    source.push_str(&text[..insert_at]);
    source.push_str(&cute.helpers);
    source.push_str(&head);
    let name_at = line_start(k.func.name_span.start.line) + k.func.name_span.start.col as usize;
    match cute.launch_bounds.as_ref().filter(|_| !bounded) {
        Some(bounds) => {
            source.push_str(&text[k.func.start_byte..name_at]);
            source.push_str(bounds);
            source.push(' ');
            source.push_str(&text[name_at..body_start]);
        }
        None => source.push_str(&text[k.func.start_byte..body_start]),
    }
    source.push_str(&cute.body);
    source.push_str(&text[body_end..]);
    source
}
