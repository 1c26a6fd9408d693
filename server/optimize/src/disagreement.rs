//! When every candidate is rejected against a nondeterministic original, but the candidates agree
//! with each other: the original itself may be the inaccurate one. A float atomic adding millions
//! of small terms into one float rounds every addition (the H100 corpus run: an MSE loss whose
//! naive kernel is 0.44% below the true value on every run, with a run-to-run spread of only
//! 2e-6). The check stays against the original (issue 20: never looser than the spec otherwise);
//! the note tells the user what they can act on.

use kernelpro_gpu::BufferComparison;

/// One rejected candidate's worst element, against an original whose runs differed.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub buffer: String,
    pub index: u64,
    pub got: f64,
    pub original: f64,
    pub spec_rtol: f64,
}

impl Rejection {
    /// The rejection a comparison describes, where the original was nondeterministic.
    pub fn from_comparison(c: &BufferComparison) -> Option<Rejection> {
        let worst = c.worst.as_ref().filter(|_| c.original_variation.is_some() && c.bad > 0)?;
        Some(Rejection {
            buffer: c.name.clone(),
            index: worst.index,
            got: worst.got,
            original: worst.reference,
            spec_rtol: c.spec_rtol,
        })
    }
}

/// A note when two or more rejected candidates agree on the same element within the spec's rtol
/// while all of them differ from the original by more: what rtol would accept them.
pub fn note(rejections: &[Rejection]) -> Option<String> {
    let first = rejections.first()?;
    let same: Vec<&Rejection> =
        rejections.iter().filter(|r| r.buffer == first.buffer && r.index == first.index).collect();
    if same.len() < 2 || same.len() * 2 < rejections.len() {
        return None;
    }
    let lo = same.iter().map(|r| r.got).fold(f64::INFINITY, f64::min);
    let hi = same.iter().map(|r| r.got).fold(f64::NEG_INFINITY, f64::max);
    let mid = (lo + hi) / 2.0;
    let scale = mid.abs().max(first.original.abs());
    if !scale.is_finite() || scale == 0.0 || hi - lo > first.spec_rtol * scale {
        return None;
    }
    let apart = (mid - first.original).abs() / scale;
    if apart <= first.spec_rtol {
        return None;
    }
    // One significant digit, rounded up, with room for the candidates' own spread.
    let want = 2.0 * apart;
    let magnitude = 10f64.powf(want.log10().floor());
    let suggest = (want / magnitude).ceil() * magnitude;
    Some(format!(
        "{} rejected candidates agree with each other on `{}[{}]` ({lo:e} to {hi:e}) but not with the original ({:e}, \
         {apart:.1e} of its value apart), which differs between its own runs: its float atomics round every addition, \
         so the original may be the less accurate one. If the candidates are right, `// kernelpro: check rtol={suggest:e}` \
         in the spec accepts them",
        same.len(),
        first.buffer,
        first.index,
        first.original,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(got: f64) -> Rejection {
        Rejection { buffer: "loss".into(), index: 0, got, original: 0.6637, spec_rtol: 1e-3 }
    }

    /// (the candidates' values) → the note, or None.
    fn check(gots: &[f64], expected: Option<&str>) {
        let rs: Vec<Rejection> = gots.iter().map(|&g| r(g)).collect();
        assert_eq!(note(&rs).as_deref(), expected);
    }

    #[test]
    fn agreeing_candidates_get_a_tolerance_to_act_on() {
        // The H100 corpus run's MSE loss: four BlockReduce candidates near 0.6675, the original 0.6637.
        check(
            &[0.667521, 0.667519, 0.667523, 0.667520],
            Some(
                "4 rejected candidates agree with each other on `loss[0]` (6.67519e-1 to 6.67523e-1) but not with the \
                 original (6.637e-1, 5.7e-3 of its value apart), which differs between its own runs: its float atomics \
                 round every addition, so the original may be the less accurate one. If the candidates are right, \
                 `// kernelpro: check rtol=2e-2` in the spec accepts them",
            ),
        );
    }

    #[test]
    fn no_note_for_one_candidate_or_disagreeing_ones() {
        check(&[0.6675], None);
        // 0.66 and 0.67 are 1.5% apart: wider than the spec's rtol, so they do not agree.
        check(&[0.66, 0.67], None);
        check(&[], None);
    }
}
