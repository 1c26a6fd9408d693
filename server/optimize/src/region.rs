//! Where a candidate may differ from the original: the kernel, its launch-spec
//! block, and helpers inserted directly above that block. The edit offered to
//! the user replaces exactly that region.

use kernelpro_source::SourceFile;

pub use kernelpro_model::LineEdit;

/// 0-based `[first, last]` lines of kernel `name` with the comment block above it.
pub fn kernel_region(text: &str, source: &SourceFile, name: &str) -> Option<(u32, u32)> {
    let k = source.kernel(name)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut first = k.span.start.line;
    while first > 0 && lines.get(first as usize - 1).is_some_and(|l| l.trim_start().starts_with("//")) {
        first -= 1;
    }
    Some((first, k.span.end.line))
}

/// The line edit turning `original` into `candidate`, if every changed line
/// lies inside the kernel's region; `Err` says what else was touched.
pub fn edit_within_region(original: &str, candidate: &str, region: (u32, u32)) -> Result<Option<LineEdit>, String> {
    let a: Vec<&str> = original.split_inclusive('\n').collect();
    let b: Vec<&str> = candidate.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if prefix == a.len() && prefix == b.len() {
        return Ok(None);
    }
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a.iter().rev().zip(b.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    let (start, end) = (prefix, a.len() - suffix);
    // Insertions just above the region (new helpers) are allowed.
    if (start as u32) < region.0 || (end as u32) > region.1 + 1 {
        return Err(format!(
            "changes lines {}..{} outside the kernel (lines {}..{})",
            start + 1,
            end,
            region.0 + 1,
            region.1 + 1
        ));
    }
    Ok(Some(LineEdit { start_line: start as u32, end_line: end as u32, text: b[prefix..b.len() - suffix].concat() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIG: &str = "// other\n__global__ void a(float* y) { y[0] = 1; }\n\n// kernelpro: grid = 1\n__global__ void k(float* y) {\n  y[0] = 2.0;\n}\nint main() {}\n";

    fn check(candidate: &str, expected: Result<Option<(u32, u32, &str)>, &str>) {
        let region = kernel_region(ORIG, &kernelpro_source::parse(ORIG), "k").unwrap();
        assert_eq!(region, (3, 6));
        let got = edit_within_region(ORIG, candidate, region);
        match (got, expected) {
            (Ok(e), Ok(want)) => {
                assert_eq!(e.map(|e| (e.start_line, e.end_line, e.text)), want.map(|(s, e, t)| (s, e, t.to_string())))
            }
            (Err(e), Err(want)) => assert!(e.contains(want), "{e}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn edits_inside_the_kernel_only() {
        check(ORIG, Ok(None));
        check(&ORIG.replace("2.0;", "2.0f;"), Ok(Some((5, 6, "  y[0] = 2.0f;\n"))));
        check(
            &ORIG.replace("// kernelpro: grid", "__device__ float h() { return 1; }\n// kernelpro: grid"),
            Ok(Some((3, 3, "__device__ float h() { return 1; }\n"))),
        );
        check(&ORIG.replace("y[0] = 1;", "y[0] = 3;"), Err("outside the kernel"));
        check(&ORIG.replace("int main() {}", "int main() { return 1; }"), Err("outside the kernel"));
    }
}
