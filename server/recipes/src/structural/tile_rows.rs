//! A thread that handles several rows of a tile in a loop, read as one
//! thread per element:
//!
//! ```text
//! int x = blockIdx.x * TILE + threadIdx.x;              int x = blockIdx.x * blockDim.x + threadIdx.x;
//! int y = blockIdx.y * TILE + threadIdx.y;      ==>     int y = blockIdx.y * blockDim.y + threadIdx.y;
//! for (int j = 0; j < TILE; j += ROWS)                  if (x < width && y < height) { S[y + j := y] }
//!   S
//! ```
//!
//! under launches whose blocks are `TILE x ROWS` (so the loop's rows are the
//! tile's) and whose grids cover exactly `width x height` (`width` the
//! integer parameter that every launch sets to `grid.x * TILE`, and that the
//! accesses use as the row length of `x`; `height` likewise for `y`). The
//! units are then the same elements as the original's, which structural
//! rewrites re-map launch-agnostically. Only a rewrite's view.
//!
//! Declarations between the indices and the loop that do not depend on the
//! thread (`int width = gridDim.x * TILE;`) are kept, before the indices. A
//! row length that comes from the launch itself (`gridDim.x * TILE`, no
//! parameter carries it) makes the bounds the launch's own coverage,
//! `gridDim.x * TILE` by `gridDim.y * TILE`: the rewrites of that view keep the
//! user's launch ([`super::launch::launch_variants`] proposes no other).

use crate::kernel::Kernel;
use crate::syntax::{descendants, edited, statements};
use kernelpro_source::kernel_model::{Atom, Dim, Poly, Space, Step};
use tree_sitter::Node;

/// `T NAME = VALUE;` with one declarator: (type, name).
fn decl(k: &Kernel, st: Node) -> Option<(String, String)> {
    if st.kind() != "declaration" {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
    Some((k.text_of(st.child_by_field_name("type")?).to_string(), k.text_of(name).to_string()))
}

/// Whether every launch the search may pick gives scalar parameter `name` the value `value(launch)`.
fn covers(k: &Kernel, name: &str, value: impl Fn(&kernelpro_spec::LaunchSpec) -> i64) -> bool {
    k.all_launches().is_some_and(|ls| {
        !ls.is_empty()
            && ls.iter().all(|l| {
                l.args.iter().any(|a| {
                    matches!(a, kernelpro_spec::Arg::Scalar(s) if s.name == name
                        && matches!(s.value, kernelpro_spec::ScalarValue::I64(v) if v == value(l)))
                })
            })
    })
}

pub(crate) fn one_per_element(text: &str, name: &str) -> Option<String> {
    let k = Kernel::find(text, name)?;
    let sts = statements(k.body());
    let [sx, sy, uniform @ .., lp] = &sts[..] else { return None };
    let (sx, sy, lp) = (*sx, *sy, *lp);
    let ((tx, x), (ty, y)) = (decl(&k, sx)?, decl(&k, sy)?);
    if lp.kind() != "for_statement" {
        return None;
    }
    let model = k.model()?;
    let value = |n: &str| model.thread_values.iter().find(|(v, _)| v == n).map(|(_, p)| p.clone());
    // Declarations between the indices and the loop: the same in every thread (no thread or block
    // index, no block extent: the view's blocks are not the original's), and not of x or y.
    for d in uniform {
        let (_, n) = decl(&k, *d)?;
        // Identifiers only: `gridDim.x`'s field is not an index named `x`.
        let words = kernelpro_source::units::recognize::names_in(&k, *d);
        if words.iter().any(|w| ["threadIdx", "blockIdx", "blockDim", x.as_str(), y.as_str()].contains(w))
            || crate::syntax::has_side_effects(*d)
            || k.text_of(*d).contains('[')
            || n == x
            || n == y
        {
            return None;
        }
    }
    let (vx, vy) = (value(&x)?, value(&y)?);
    let tile = vx.coefficient(&Atom::Bid(Dim::X)).as_constant()?;
    let expect = |d: Dim| Poly::atom(Atom::Tid(d)).add(&Poly::atom(Atom::Bid(d)).scale(tile));
    if vx != expect(Dim::X) || vy != expect(Dim::Y) {
        return None;
    }
    // The loop over the tile's rows: j from 0 below TILE by ROWS.
    let l = model.loops.iter().find(|l| l.span.start.line as usize == lp.start_position().row && l.parent.is_none())?;
    let j = l.var.clone()?;
    let Step::Add(step) = &l.step else { return None };
    let rows = step.as_constant()?;
    if l.init.as_ref().and_then(Poly::as_constant) != Some(0)
        || l.bound.as_ref().and_then(Poly::as_constant) != Some(tile)
    {
        return None;
    }
    let launches = k.all_launches()?;
    if rows <= 0 || tile % rows != 0 || launches.iter().any(|l| l.block != [tile as u32, rows as u32, 1]) {
        return None;
    }
    // The row lengths the accesses use: x's with y's coefficient where x moves by one, and back.
    let sym = |p: Poly| -> Option<String> {
        match p.atoms().collect::<Vec<_>>()[..] {
            [Atom::Sym(s)] if p.coefficient(&Atom::Sym(s.clone())).as_constant() == Some(1) => Some(s.clone()),
            _ => None,
        }
    };
    let mut bx = None;
    let mut by = None;
    for a in model.accesses.iter().filter(|a| a.space == Space::Global) {
        let (cx, cy) = (a.index.coefficient(&Atom::Tid(Dim::X)), a.index.coefficient(&Atom::Tid(Dim::Y)));
        if cx.as_constant() == Some(1) {
            bx = bx.or(sym(cy));
        } else if cy.as_constant() == Some(1) {
            by = by.or(sym(cx));
        }
    }
    // Otherwise (a row length from the launch: `width = gridDim.x * TILE`, no parameter carries it)
    // the units are the launch's own coverage, written as such: the rewrites then keep that launch.
    let (bx, by) = match (bx, by) {
        (Some(bx), Some(by))
            if covers(&k, &bx, |l| l.grid[0] as i64 * tile) && covers(&k, &by, |l| l.grid[1] as i64 * tile) =>
        {
            (bx, by)
        }
        _ => (format!("(int)(gridDim.x * {tile})"), format!("(int)(gridDim.y * {tile})")),
    };
    // The loop's body with `y + j` as `y`: no other use of `j`, nothing assigned to x or y.
    let body = lp.child_by_field_name("body")?;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for d in descendants(body) {
        let parent = d.parent();
        match d.kind() {
            "binary_expression" if d.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "+") => {
                let (l, r) = (d.child_by_field_name("left")?, d.child_by_field_name("right")?);
                let (l, r) = (k.text_of(l), k.text_of(r));
                if (l == y && r == j) || (l == j && r == y) {
                    edits.push((d.byte_range(), y.clone()));
                }
            }
            "identifier" if k.text_of(d) == j => {
                let in_sum = parent.is_some_and(|p| edits.iter().any(|(r, _)| *r == p.byte_range()));
                if !in_sum {
                    return None;
                }
            }
            "assignment_expression" | "update_expression" => {
                let t = d.child_by_field_name("left").or(d.child_by_field_name("argument"))?;
                if [x.as_str(), y.as_str()].contains(&k.text_of(t)) {
                    return None;
                }
            }
            "break_statement" | "continue_statement" | "return_statement" | "goto_statement" => return None,
            _ => {}
        }
    }
    let base = body.start_byte();
    let mut inner = edited(k.text_of(body), edits.into_iter().map(|(r, with)| (r.start - base..r.end - base, with)));
    if body.kind() == "compound_statement" {
        inner = inner.trim().strip_prefix('{')?.strip_suffix('}')?.trim().to_string();
    }
    let kept: String = uniform.iter().map(|d| format!("  {}\n", k.text_of(*d))).collect();
    let new_body = format!(
        "{{\n{kept}  {tx} {x} = blockIdx.x * blockDim.x + threadIdx.x;\n  {ty} {y} = blockIdx.y * blockDim.y + threadIdx.y;\n  if ({x} < {bx} && {y} < {by}) {{\n    {inner}\n  }}\n}}"
    );
    Some(k.with_body(&new_body))
}

#[cfg(test)]
mod tests {
    use super::one_per_element;
    use crate::kernel::Kernel;

    /// A row length that is the launch's own (`w = gridDim.x * TD`): the units are the launch's coverage,
    /// and the rewrites of that view keep the launch.
    #[test]
    fn a_row_length_from_the_launch_bounds_the_units_by_the_launch() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/structural/transpose_rows_loop_grid_width.cu");
        let text = std::fs::read_to_string(path).unwrap();
        let view = one_per_element(&text, "transpose_grid_width").expect("a view");
        assert!(view.contains("if (c < (int)(gridDim.x * 32) && r < (int)(gridDim.y * 32))"), "{view}");
        let k = Kernel::find(&view, "transpose_grid_width").expect("the kernel");
        let u = kernelpro_source::units::recognize::units(&k).expect("units");
        assert!(super::super::launch::sized_by_launch(&k, &u));
    }
}
