//! The writing half of the work units ([`kernelpro_source::units`] reads
//! them): a unit body's pieces as text and the unit loop's C expressions, which
//! every structural rewrite builds its kernel from.

use kernelpro_source::syntax::descendants;
use kernelpro_source::units::Kernel;
use kernelpro_source::units::recognize::{Piece, Units, derived_decl, edited, is_loop};

/// The unit loop of [`Units`] as C text.
pub(crate) trait UnitsText {
    /// The unit count as a C expression (64-bit).
    fn count(&self) -> String;

    /// Declarations re-binding the user's index names from the unit counter `u`, after [`Self::restore`].
    fn rebind(&self, u: &str) -> String;

    /// Statements that start a unit with the parameters it moves where the launch gave them (saved
    /// in [`Self::prologue`]): the first lines of every unit, whoever re-binds its indices.
    fn restore(&self) -> String;

    /// The calling thread's index among the threads that walk the units (64-bit).
    fn grid_tid(&self) -> String;

    /// How many threads walk the units (64-bit).
    fn grid_threads(&self) -> String;

    /// The calling block's index among the blocks that walk the units (64-bit):
    /// over the x (and y) blocks alone when fixed indices keep the launch's y/z.
    fn block_index(&self) -> &'static str;

    /// How many blocks walk the units (64-bit).
    fn block_count(&self) -> &'static str;

    /// The launch's grid extents a rewrite keeps (after x): y and z for fixed y/z indices, z alone for a batch on z.
    fn kept_extents(&self, parts: &[String]) -> Vec<String>;

    /// A warp per unit: the kernel body walking the units with a grid stride of
    /// warps, `kp_lane` the lane, `inner` (indented at `ind` plus two) the per-unit
    /// lines; `comment` says which rewrite made it.
    fn warp_loop(&self, prologue: &str, comment: &str, inner: &str, ind: &str, outer: &str) -> String;

    /// The head declarations and the fixed indices, as lines at indentation `to`, emitted before the unit loop.
    fn prologue(&self, k: &Kernel, to: &str) -> Option<String>;
}

impl UnitsText for Units<'_> {
    fn count(&self) -> String {
        self.indices.iter().map(|i| format!("(long long)({})", i.bound)).collect::<Vec<_>>().join(" * ")
    }

    fn restore(&self) -> String {
        self.restored.iter().map(|p| format!("{p} = {};\n", saved(p))).collect()
    }

    fn rebind(&self, u: &str) -> String {
        let mut out = self.restore();
        let mut divisor = String::new();
        for (n, i) in self.indices.iter().enumerate().rev() {
            let base = if divisor.is_empty() { u.to_string() } else { format!("({u} / ({divisor}))") };
            let value = if n == 0 { base } else { format!("{base} % ({})", i.bound) };
            out.push_str(&format!("const {} {} = ({})({});\n", i.ty, i.name, i.ty, value));
            divisor = if divisor.is_empty() {
                format!("(long long)({})", i.bound)
            } else {
                format!("{divisor} * (long long)({})", i.bound)
            };
        }
        out
    }

    fn grid_tid(&self) -> String {
        if self.fixed.is_empty() {
            super::GRID_TID.to_string()
        } else {
            format!("({} * {} + {})", self.block_index(), super::BLOCK_THREADS, super::BLOCK_TID)
        }
    }

    fn grid_threads(&self) -> String {
        if self.fixed.is_empty() {
            super::GRID_THREADS.to_string()
        } else {
            format!("({} * {})", self.block_count(), super::BLOCK_THREADS)
        }
    }

    fn block_index(&self) -> &'static str {
        if self.fixed.is_empty() {
            "((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z))"
        } else if self.walks_y() {
            "((long long)blockIdx.x + (long long)gridDim.x * blockIdx.y)"
        } else {
            "(long long)blockIdx.x"
        }
    }

    fn block_count(&self) -> &'static str {
        if self.fixed.is_empty() {
            "((long long)gridDim.x * gridDim.y * gridDim.z)"
        } else if self.walks_y() {
            "((long long)gridDim.x * gridDim.y)"
        } else {
            "(long long)gridDim.x"
        }
    }

    fn kept_extents(&self, parts: &[String]) -> Vec<String> {
        let mut rest: Vec<String> = parts.iter().skip(1).cloned().collect();
        if self.walks_y() && !rest.is_empty() {
            rest[0] = "1".to_string();
        }
        rest
    }

    fn warp_loop(&self, prologue: &str, comment: &str, inner: &str, ind: &str, outer: &str) -> String {
        format!(
            "{{\n{ind}// {comment}\n{prologue}{ind}const int kp_lane = (int)({} & 31u);\n{ind}const long long kp_warps = {} >> 5;\n{ind}for (long long kp_u = {} >> 5; kp_u < {}; kp_u += kp_warps) {{\n{inner}{ind}}}\n{outer}}}",
            super::BLOCK_TID,
            self.grid_threads(),
            self.grid_tid(),
            self.count()
        )
    }

    fn prologue(&self, k: &Kernel, to: &str) -> Option<String> {
        let mut out = String::new();
        for n in &self.head {
            out.push_str(&format!("{to}{}\n", render(k, Piece::Node(*n), &[], to)?));
        }
        for (name, ty, axis) in &self.fixed {
            out.push_str(&format!("{to}const {ty} {name} = ({ty})blockIdx.{axis};\n"));
        }
        for p in &self.restored {
            out.push_str(&format!("{to}const auto {} = {p};\n", saved(p)));
        }
        Some(out)
    }
}

/// The launch's value of a parameter the unit body moves, kept for every unit.
fn saved(param: &str) -> String {
    format!("kp_0_{param}")
}

/// `text` re-indented: its first line as is, later lines shifted from `from` (the original indentation) to `to`.
pub(crate) fn reindent(text: &str, from: &str, to: &str) -> String {
    let mut lines = text.lines();
    let mut out = lines.next().unwrap_or("").to_string();
    for l in lines {
        out.push('\n');
        out.push_str(to);
        out.push_str(l.strip_prefix(from).unwrap_or(l.trim_start()));
    }
    out
}

/// A unit-body piece as text at indentation `to`: a skipped-unit guard as
/// `continue`, a node with `edits` applied and each `return;` (outside any
/// loop of the piece) as `continue;`. `None` when a `return` sits in a loop.
pub(crate) fn render(k: &Kernel, piece: Piece, edits: &[(std::ops::Range<usize>, String)], to: &str) -> Option<String> {
    let node = match piece {
        Piece::Skip(atom, true) => return Some(format!("if ({}) continue;", k.text_of(atom))),
        Piece::Skip(atom, false) => return Some(format!("if (!({})) continue;", k.text_of(atom))),
        Piece::Derived(n) => return derived_decl(k, n),
        Piece::Node(n) => n,
    };
    let mut all = edits.to_vec();
    for r in descendants(node).into_iter().filter(|d| d.kind() == "return_statement") {
        if r.named_child_count() != 0 {
            return None;
        }
        let mut up = Some(r);
        while let Some(n) = up {
            if is_loop(n) {
                return None;
            }
            if n == node {
                break;
            }
            up = n.parent();
        }
        all.push((r.byte_range(), "continue;".to_string()));
    }
    let from = kernelpro_source::syntax::indent_at(k.text, node.start_byte());
    Some(reindent(&edited(k, node, &all), from, to))
}
