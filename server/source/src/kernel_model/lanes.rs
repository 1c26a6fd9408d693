//! What the 32 lanes of one warp address together: sectors per global request
//! and shared-memory bank conflicts, computed by placing each lane at its
//! thread index (from the block shape) and evaluating the access's index.
//!
//! Lane differences that are symbolic (`C` floats) are taken as at least one
//! 32-byte sector apart: the finding names the symbol, and a row length under
//! 8 floats is not what these kernels run with. Thread-varying opaque values
//! (gathers, non-affine indices) give no answer.

use super::poly::{Atom, Dim, Poly};
use std::collections::{BTreeMap, BTreeSet};

/// The threads of a block's first warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarpGeometry {
    pub block: Option<[u32; 3]>,
}

impl WarpGeometry {
    pub fn new(block: Option<[u32; 3]>) -> WarpGeometry {
        WarpGeometry { block }
    }
    /// Lanes of a warp, as (tid.x, tid.y, tid.z). Without a known block,
    /// `threadIdx.x` is taken as the lane dimension (blockDim.x ≥ 32).
    pub fn lanes(&self) -> Vec<[i64; 3]> {
        let [bx, by, bz] = self.block.map(|b| b.map(|d| d.max(1) as i64)).unwrap_or([32, 1, 1]);
        let threads = (bx * by * bz).min(32);
        (0..threads).map(|l| [l % bx, (l / bx) % by, l / (bx * by)]).collect()
    }
    /// Lanes span several rows of `threadIdx.y` (blockDim.x < 32).
    pub fn lanes_span_rows(&self) -> bool {
        self.block.is_some_and(|b| b[0] < 32 && b[1] > 1)
    }

    /// Each lane's index minus lane 0's, in elements; `None` when the index
    /// varies across lanes through something the model cannot evaluate.
    pub fn lane_offsets(&self, index: &Poly) -> Option<Vec<Poly>> {
        if !index.is_affine() {
            return None;
        }
        let block = self.block;
        let at = |lane: usize, t: [i64; 3]| {
            index.substitute(|a| match a {
                Atom::Tid(Dim::X) => Some(Poly::constant(t[0])),
                Atom::Tid(Dim::Y) => Some(Poly::constant(t[1])),
                Atom::Tid(Dim::Z) => Some(Poly::constant(t[2])),
                Atom::Lane => Some(Poly::constant(lane as i64)),
                Atom::Bdim(d) => block.map(|b| Poly::constant(b[*d as usize] as i64)),
                _ => None,
            })
        };
        let lanes = self.lanes();
        let first = at(0, lanes[0]);
        Some(lanes.iter().enumerate().map(|(l, t)| at(l, *t).sub(&first)).collect())
    }
}

/// 32-byte sectors one warp request touches, and the fewest it could touch
/// (`elem` bytes per lane, contiguous). `None` when unknown.
pub fn sectors_per_request(geometry: &WarpGeometry, index: &Poly, elem: u32) -> Option<(u32, u32)> {
    let offsets = geometry.lane_offsets(index)?;
    let mut sectors: BTreeSet<(Poly, i64)> = BTreeSet::new();
    for offset in &offsets {
        let symbolic = offset.without(|_| false).sub(&Poly::constant(offset.constant_term()));
        let start = offset.constant_term() * elem as i64;
        for byte in [start, start + elem as i64 - 1] {
            sectors.insert((symbolic.clone(), byte.div_euclid(32)));
        }
        if elem > 32 {
            for s in start.div_euclid(32)..=(start + elem as i64 - 1).div_euclid(32) {
                sectors.insert((symbolic.clone(), s));
            }
        }
    }
    let ideal = ((offsets.len() as u32 * elem).div_ceil(32)).max(1);
    Some((sectors.len() as u32, ideal))
}

/// The worst n-way bank conflict of a shared access (`elem` bytes a lane),
/// 1 when conflict-free or a broadcast; `None` when a lane difference is not a constant.
/// 8- and 16-byte accesses are served in half- and quarter-warp phases.
pub fn bank_conflict_ways(geometry: &WarpGeometry, index: &Poly, elem: u32) -> Option<u32> {
    let offsets = geometry.lane_offsets(index)?;
    let bytes: Vec<i64> = offsets.iter().map(|o| o.as_constant().map(|c| c * elem as i64)).collect::<Option<_>>()?;
    let per_phase = (32 / (elem / 4).max(1)).max(1) as usize;
    let mut worst = 1;
    for phase in bytes.chunks(per_phase) {
        let mut banks: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        for &start in phase {
            let words = (elem as i64 / 4).max(1);
            for w in 0..words {
                let word = (start / 4).div_euclid(1) + w;
                banks.entry(word.rem_euclid(32)).or_default().insert(word);
            }
        }
        worst = worst.max(banks.values().map(|w| w.len() as u32).max().unwrap_or(1));
    }
    Some(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(d: Dim) -> Poly {
        Poly::atom(Atom::Tid(d))
    }

    #[test]
    fn sectors_and_banks() {
        let g = WarpGeometry::new(None);
        let c = Poly::atom(Atom::Sym("C".into()));
        assert_eq!(sectors_per_request(&g, &tid(Dim::X), 4), Some((4, 4)));
        assert_eq!(sectors_per_request(&g, &tid(Dim::X).mul(&c), 4), Some((32, 4)));
        assert_eq!(sectors_per_request(&g, &tid(Dim::X).scale(2), 4), Some((8, 4)));
        assert_eq!(sectors_per_request(&g, &Poly::constant(3), 4), Some((1, 4)));
        // (16, 16) block: two rows of 16 floats per warp.
        let g16 = WarpGeometry::new(Some([16, 16, 1]));
        let w = Poly::atom(Atom::Sym("W".into()));
        assert_eq!(sectors_per_request(&g16, &tid(Dim::Y).mul(&w).add(&tid(Dim::X)), 4), Some((4, 4)));
        // Lanes 16 apart share a sector: 16 sectors, not 32.
        assert_eq!(sectors_per_request(&g16, &tid(Dim::X).mul(&w).add(&tid(Dim::Y)), 4), Some((16, 4)));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X), 4), Some(1));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X).scale(32), 4), Some(32));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X).scale(33), 4), Some(1));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X).scale(2), 4), Some(2));
        assert_eq!(bank_conflict_ways(&g, &Poly::constant(5), 4), Some(1));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X), 8), Some(1));
        assert_eq!(bank_conflict_ways(&g, &tid(Dim::X).scale(16), 8), Some(16));
    }
}
