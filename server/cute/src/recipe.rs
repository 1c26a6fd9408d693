//! `CuteGemm`: replaces a detected matrix product's body with a call to a
//! generated CuTe GEMM, placed (with its includes) directly above the
//! kernel's spec block, and a `__launch_bounds__` qualifier when the
//! kernel has none. The parameters, the spec and the launch stay as they are. It applies when the spec resolves, the block has 128 or 256
//! threads, and the known sizes are multiples of the tile (other sizes would
//! only reach the generated kernel's slow per-element path).

use crate::detect_gemm;
use crate::generate::{cute_gemm_kernel, helper_name};
use crate::kernel::KernelInfo;
use kernelpro_recipes::{Recipe, Rewrite};

pub struct CuteGemmRecipe;

/// Sizes the fast path needs M and N (and K, at most) to be multiples of.
const TILE_MN: i64 = 128;
const TILE_K_MAX: i64 = 32;

impl Recipe for CuteGemmRecipe {
    fn name(&self) -> &'static str {
        "CuteGemm"
    }
    fn answers(&self) -> &'static [&'static str] {
        &["TensorCore", "SharedMemTiling"]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let (Some(shape), Some(k)) = (detect_gemm(text, kernel), KernelInfo::find(text, kernel))
        else {
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
        let multiple = |v: Option<i64>, of: i64| v.is_some_and(|v| v > 0 && v % of == 0);
        if !(multiple(shape.m.value, TILE_MN)
            && multiple(shape.n.value, TILE_MN)
            && multiple(shape.k.value, TILE_K_MAX))
        {
            return Vec::new();
        }
        let threads = launch.block.iter().product();
        let Ok(cute) = cute_gemm_kernel(&shape, kernel, &k.func.params, threads) else {
            return Vec::new();
        };
        let (body_start, body_end) = k.func.body_bytes.expect("KernelInfo::find checks the body");
        let first_line = k
            .spec_lines
            .first()
            .map_or(k.func.span.start.line, |l| l.line);
        let insert_at: usize = text
            .split_inclusive('\n')
            .take(first_line as usize)
            .map(str::len)
            .sum();
        let mut source = String::with_capacity(text.len() + cute.helpers.len() + cute.body.len());
        source.push_str(&text[..insert_at]);
        source.push_str(&cute.helpers);
        let name_at: usize = text
            .split_inclusive('\n')
            .take(k.func.name_span.start.line as usize)
            .map(str::len)
            .sum::<usize>()
            + k.func.name_span.start.col as usize;
        let bounded = text[k.func.start_byte..body_start].contains("__launch_bounds__");
        match cute.launch_bounds.filter(|_| !bounded) {
            Some(bounds) => {
                source.push_str(&text[insert_at..name_at]);
                source.push_str(&bounds);
                source.push(' ');
                source.push_str(&text[name_at..body_start]);
            }
            None => source.push_str(&text[insert_at..body_start]),
        }
        source.push_str(&cute.body);
        source.push_str(&text[body_end..]);
        vec![Rewrite {
            source,
            note: cute.note,
        }]
    }
}
