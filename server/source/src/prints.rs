//! What a program's profile of each kernel depends on, as fingerprints of its
//! text: the kernel's own definition, and everything outside the kernels (the
//! device helpers they call, the macros, the host code that sizes, fills and
//! launches them). Where a save changes neither, the kernel's last profile
//! still holds, and profile-on-save need not measure it again.
//!
//! The parse's tokens are hashed, not the bytes: comments and layout count for
//! nothing, so an edit of a comment or a blank line changes no print.

use std::collections::BTreeMap;

/// The fingerprints of one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramPrints {
    /// Kernel name → the print of its definitions (overloads and a
    /// template's specialisations together, in source order).
    pub kernels: BTreeMap<String, u64>,
    /// Everything outside the kernels' definitions.
    pub rest: u64,
}

impl ProgramPrints {
    /// The kernels whose profile in `older` still holds for this text: the
    /// rest unchanged and their own print the same.
    pub fn unchanged_since(&self, older: &ProgramPrints) -> Vec<String> {
        if self.rest != older.rest {
            return Vec::new();
        }
        self.kernels.iter().filter(|(k, p)| older.kernels.get(*k) == Some(p)).map(|(k, _)| k.clone()).collect()
    }
}

/// The prints of `text`, or `None` where it could not be parsed (past the
/// parse budget): then nothing counts as unchanged.
pub fn program_prints(text: &str) -> Option<ProgramPrints> {
    let tree = crate::parse_tree(text)?;
    let file = crate::parse(text);
    // Each kernel's byte range, in source order (definitions do not nest).
    let mut ranges: Vec<(usize, usize, &str)> =
        file.kernels().map(|k| (k.start_byte, k.end_byte, k.name.as_str())).collect();
    ranges.sort();
    let mut kernels: BTreeMap<String, u64> = BTreeMap::new();
    let mut rest = Fnv::new();
    let mut cursor = tree.walk();
    // A walk over the leaves without recursion: the nesting is the user's.
    let mut next = 0usize;
    loop {
        let node = cursor.node();
        if node.child_count() == 0 && node.kind() != "comment" {
            let bytes = &text.as_bytes()[node.start_byte()..node.end_byte()];
            let at = node.start_byte();
            while next < ranges.len() && ranges[next].1 <= at {
                next += 1;
            }
            match ranges.get(next) {
                Some(&(start, _, name)) if start <= at => {
                    let h = kernels.entry(name.to_string()).or_insert(Fnv::new().0);
                    *h = Fnv(*h).token(node.kind(), bytes).0;
                }
                _ => rest = rest.token(node.kind(), bytes),
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return Some(ProgramPrints { kernels, rest: rest.0 });
            }
        }
    }
}

/// The FNV-1a hash of `bytes`, as the prints hash their tokens: for what else a profile depends
/// on (the headers a program includes).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    Fnv::new().bytes(bytes).0
}

/// FNV-1a over each token's kind and text, a separator between tokens.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(self, bytes: &[u8]) -> Fnv {
        Fnv(bytes.iter().fold(self.0, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)))
    }
    fn token(self, kind: &str, bytes: &[u8]) -> Fnv {
        self.bytes(kind.as_bytes()).bytes(&[0]).bytes(bytes).bytes(&[0xff])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = r#"#define N 1024
__device__ float twice(float v) { return 2.f * v; }
__global__ void a(float* y, const float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = twice(x[i]);
}
__global__ void b(float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] += 1.f;
}
int main() {
  float *x, *y;
  cudaMalloc(&x, N * 4); cudaMalloc(&y, N * 4);
  a<<<N / 256, 256>>>(y, x);
  b<<<N / 256, 256>>>(y);
}
"#;

    /// `edit` applied to PROGRAM, then the kernels that keep their profile.
    fn check(from: &str, to: &str, unchanged: &[&str]) {
        let old = program_prints(PROGRAM).unwrap();
        let text = PROGRAM.replacen(from, to, 1);
        assert_ne!(text, PROGRAM, "the edit {from:?} must apply");
        let new = program_prints(&text).unwrap();
        assert_eq!(new.unchanged_since(&old), unchanged, "after {from:?} -> {to:?}");
    }

    #[test]
    fn an_edit_inside_one_kernel_changes_only_its_print() {
        check("y[i] += 1.f;", "y[i] += 2.f;", &["a"]);
        check("y[i] = twice(x[i]);", "y[i] = twice(x[i]) + 1.f;", &["b"]);
    }

    #[test]
    fn comments_and_layout_change_nothing() {
        check("y[i] += 1.f;", "y[i]  +=  1.f;   // one more\n", &["a", "b"]);
        check("int main() {", "// the host side\n\nint main() {", &["a", "b"]);
        check("__global__ void b", "/* the second */ __global__ void b", &["a", "b"]);
    }

    #[test]
    fn host_code_helpers_and_macros_change_every_kernel() {
        check("a<<<N / 256, 256>>>", "a<<<N / 128, 128>>>", &[]);
        check("return 2.f * v;", "return 3.f * v;", &[]);
        check("#define N 1024", "#define N 2048", &[]);
    }

    #[test]
    fn a_kernel_renamed_or_added_leaves_the_others() {
        check("void b(float* y)", "void c(float* y)", &["a"]);
        check("int main() {", "__global__ void c() {}\nint main() {", &["a", "b"]);
    }
}
