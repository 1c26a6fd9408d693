//! Checks that stop a candidate from gaming verification: it may not change
//! the kernel's parameter list, its launch spec (other than the order of
//! `tune` values, and the launch itself: `grid`, `block`, `smem`), or
//! anything outside the kernel's region.
//!
//! A candidate that changes the launch is one the user's host code must
//! follow; the evaluator also runs it under the original launch, so that host
//! code that does not follow stays correct.

use crate::region::{edit_within_region, kernel_region};
use kernelpro_source::SourceFile;
use kernelpro_spec::{LAUNCH_PARTS, launch_part};

/// `Err` names what the candidate changed that it may not.
pub fn check_candidate(original: &str, original_src: &SourceFile, candidate: &str, kernel: &str) -> Result<(), String> {
    let region = kernel_region(original, original_src, kernel)
        .ok_or_else(|| format!("the original has no kernel `{kernel}`"))?;
    edit_within_region(original, candidate, region)?;
    let cand_src = kernelpro_source::parse(candidate);
    let (Some(a), Some(b)) = (original_src.kernel(kernel), cand_src.kernel(kernel)) else {
        return Err(format!("the candidate has no kernel `{kernel}`"));
    };
    let shape = |f: &kernelpro_source::Function| {
        f.params.iter().map(|p| (p.name.clone(), p.base.clone(), p.pointer)).collect::<Vec<_>>()
    };
    if shape(a) != shape(b) {
        return Err("changes the kernel's parameter list (names, order or types)".into());
    }
    if spec_lines(original, kernel, false) != spec_lines(candidate, kernel, false) {
        return Err("changes the launch spec (only the order of `tune` values and the launch's `grid`, `block` and `smem` may change)".into());
    }
    Ok(())
}

/// The candidate's launch lines that differ from the original's, as
/// `grid = a` → `grid = b` (a line only one side has shows as `none`); empty
/// when it keeps the launch.
pub fn launch_changes(original: &str, candidate: &str, kernel: &str) -> Vec<String> {
    let (before, after) = (spec_lines(original, kernel, true), spec_lines(candidate, kernel, true));
    let of = |lines: &[String], part: &str| lines.iter().find(|l| launch_part(l) == Some(part)).cloned();
    LAUNCH_PARTS
        .iter()
        .filter_map(|part| match (of(&before, part), of(&after, part)) {
            (a, b) if a == b => None,
            (a, b) => {
                Some(format!("`{}` → `{}`", a.unwrap_or_else(|| "none".into()), b.unwrap_or_else(|| "none".into())))
            }
        })
        .collect()
}

/// The kernel's spec lines with each `tune` list sorted, so a reorder is no
/// change: the launch lines only (`launch`), or every other line.
fn spec_lines(text: &str, kernel: &str, launch: bool) -> Vec<String> {
    let specs = kernelpro_spec::parse_file(text);
    let mut lines: Vec<String> =
        specs.kernel(kernel).map(|k| k.lines.iter().map(|l| normalize_tune(&l.text)).collect()).unwrap_or_default();
    lines.extend(specs.file_lets.iter().map(|l| normalize_tune(&l.text)));
    lines.retain(|l| launch_part(l).is_some() == launch);
    lines
}

fn normalize_tune(line: &str) -> String {
    let compact: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(rest) = compact.strip_prefix("tune ") else { return compact };
    let Some((head, list)) = rest.split_once('[') else { return compact };
    let mut values: Vec<String> = list.trim_end_matches(']').split(',').map(|v| v.trim().to_string()).collect();
    values.sort();
    format!("tune {head}[{}]", values.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIG: &str = "// kernelpro: tune B in [128, 256]\n// kernelpro: grid = 4\n// kernelpro: block = B\n// kernelpro: y = out float[4 * B]\n__global__ void k(float* y) {\n  y[0] = 2.0;\n}\n";

    fn check(candidate: &str, expected: Result<(), &str>) {
        let got = check_candidate(ORIG, &kernelpro_source::parse(ORIG), candidate, "k");
        match (got, expected) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(want)) => assert!(e.contains(want), "{e}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn allowed_and_forbidden_changes() {
        check(&ORIG.replace("2.0", "2.0f"), Ok(()));
        check(&ORIG.replace("[128, 256]", "[256, 128]"), Ok(()));
        check(&ORIG.replace("float* y", "float* __restrict__ y"), Ok(()));
        check(&ORIG.replace("float* y", "double* y"), Err("parameter list"));
        check(&ORIG.replace("float[4 * B]", "float[B]"), Err("launch spec"));
        check(&ORIG.replace("[128, 256]", "[128]"), Err("launch spec"));
        // The launch may change (the evaluator runs such a candidate under both).
        check(&ORIG.replace("grid = 4", "grid = 1"), Ok(()));
        check(&ORIG.replace("block = B\n", "block = B\n// kernelpro: smem = 1024\n"), Ok(()));
    }

    #[test]
    fn launch_changes_name_each_changed_line() {
        let changed =
            ORIG.replace("grid = 4", "grid = 1").replace("block = B\n", "block = B\n// kernelpro: smem = 1024\n");
        assert_eq!(launch_changes(ORIG, &changed, "k"), ["`grid = 4` → `grid = 1`", "`none` → `smem = 1024`"]);
        assert!(launch_changes(ORIG, &ORIG.replace("2.0", "2.0f"), "k").is_empty());
    }
}
