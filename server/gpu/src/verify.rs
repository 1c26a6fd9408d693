//! Which tolerance a comparison uses. A kernel that adds floats with atomics
//! gives different bits on every run, so the original itself fails its own
//! check. The harness runs the original several times on the same inputs;
//! where the outputs differ, candidates are accepted within
//! [`VARIATION_MULTIPLE`] times that measured variation, and never looser.
//! Otherwise the spec's tolerance is used unchanged. Pure functions, no GPU.

use crate::job::{BufferComparison, Mismatch};
use kernelpro_spec::{BufferArg, ElemType, Tolerance};
use serde::{Deserialize, Serialize};

/// How many times the original runs on the same inputs when a job has a
/// reference (the first run's outputs are the reference). The extra runs stop
/// after the first if it gives the same bits. With two runs, a candidate as
/// accurate as a float-atomic original would still fail about 9% of checks at
/// 4x; with four, about 0.1% (a simulation of normal rounding errors).
pub const ORIGINAL_RUNS: u32 = 4;

/// A nondeterministic original's candidates may differ from it by this
/// multiple of the most its own runs differed, and no more. Its runs
/// understate its error: atomics arrive in much the same order every run. On
/// an H100 (2026-12-05) a block-reduced sum of the same floats differed from
/// the float-atomic original by 6.0x the spread of the original's 4 runs (0.26
/// at a value of 323), so 4x rejected a better result; one that skips 1/64 of
/// the input differs by about 100x and is still rejected at 8x.
pub const VARIATION_MULTIPLE: f64 = 8.0;

/// Runs that differ by more than this fraction of the output's largest value
/// are not float reordering (a race, an uninitialised read): the spec's
/// tolerance is kept, so a racy original cannot make any candidate pass.
pub const MAX_REORDER_VARIATION: f64 = 1e-2;

/// What one pass over two versions of an output finds (`data::pair_stats` on
/// the host, `kp_compare` on the device).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PairStats {
    /// Elements outside the tolerance.
    pub bad: u64,
    /// Elements whose bits differ (both NaN counts as equal).
    pub differing: u64,
    /// Elements NaN in one version only.
    pub one_nan: u64,
    /// The first element with the largest error beyond tolerance.
    pub worst: Option<u64>,
    /// The largest |got - want| where neither is NaN.
    pub max_abs_diff: f64,
    /// The largest finite |want|.
    pub max_abs: f64,
}

/// How much the original's outputs differed between its runs on identical inputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Variation {
    /// Runs of the original compared with its first.
    pub runs: u32,
    /// Elements whose bits differed in some run (the most in one run).
    pub differing: u64,
    /// Elements NaN in one run and not in another.
    pub one_nan: u64,
    #[serde(with = "crate::floats")]
    pub max_abs_diff: f64,
    /// The largest finite |value| of the first run, the scale of `max_abs_diff`.
    #[serde(with = "crate::floats")]
    pub max_abs: f64,
}

impl Variation {
    /// The first run's outputs against later runs' (`None` when every run gave the same bits).
    pub fn of_runs(later: &[PairStats]) -> Option<Variation> {
        let differ: Vec<&PairStats> = later.iter().filter(|s| s.differing > 0).collect();
        if differ.is_empty() {
            return None;
        }
        Some(Variation {
            runs: later.len() as u32 + 1,
            differing: differ.iter().map(|s| s.differing).max().unwrap_or(0),
            one_nan: differ.iter().map(|s| s.one_nan).max().unwrap_or(0),
            max_abs_diff: later.iter().map(|s| s.max_abs_diff).fold(0.0, f64::max),
            max_abs: later.iter().map(|s| s.max_abs).fold(0.0, f64::max),
        })
    }

    /// `max_abs_diff` as a fraction of the largest value (∞ when all are 0 but they differ).
    pub fn relative(&self) -> f64 {
        if self.max_abs > 0.0 {
            self.max_abs_diff / self.max_abs
        } else if self.max_abs_diff > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Whether the runs differ the way reordered float additions do: by a
    /// small, finite fraction of the values, never in NaN-ness.
    pub fn looks_like_reordering(&self, elem: ElemType) -> bool {
        elem.is_float()
            && self.one_nan == 0
            && self.max_abs_diff.is_finite()
            && self.relative() <= MAX_REORDER_VARIATION
    }

    /// `differ by up to 3.1e-3 (1.4e-6 of its largest value)`.
    fn describe(&self) -> String {
        let mut s = format!("differ by up to {:.2e} ({:.1e} of its largest value", self.max_abs_diff, self.relative());
        if self.one_nan > 0 {
            s.push_str(&format!(", {} elements NaN in one run only", self.one_nan));
        }
        s.push(')');
        s
    }
}

/// Where a comparison's tolerance came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToleranceBasis {
    /// The original gave the same bits on every run: the spec's tolerance.
    Spec,
    /// The original varies, but the spec's tolerance is wider than the multiple of its variation.
    SpecCoversVariation,
    /// The original varies beyond the spec: atol is [`VARIATION_MULTIPLE`] × its variation.
    OriginalVariation,
    /// The original varies by more than float reordering explains: the spec's tolerance, unchanged.
    SpecOriginalRacy,
}

/// The tolerance to compare a candidate's output with: the spec's, or where
/// the original's own runs differ like reordered float sums, an atol of
/// [`VARIATION_MULTIPLE`] × the largest difference when that is wider (rtol
/// stays the spec's).
pub fn tolerance_used(spec: Tolerance, elem: ElemType, variation: Option<&Variation>) -> (Tolerance, ToleranceBasis) {
    match variation {
        None => (spec, ToleranceBasis::Spec),
        Some(v) if !v.looks_like_reordering(elem) => (spec, ToleranceBasis::SpecOriginalRacy),
        Some(v) => {
            let atol = VARIATION_MULTIPLE * v.max_abs_diff;
            if atol <= spec.atol {
                (spec, ToleranceBasis::SpecCoversVariation)
            } else {
                (Tolerance { rtol: spec.rtol, atol }, ToleranceBasis::OriginalVariation)
            }
        }
    }
}

impl BufferComparison {
    /// The comparison of `buf` made with [`tolerance_used`] for `spec` and the original's `variation`.
    pub fn new(
        buf: &BufferArg,
        spec: Tolerance,
        variation: Option<Variation>,
        bad: u64,
        worst: Option<Mismatch>,
    ) -> BufferComparison {
        let (used, basis) = tolerance_used(spec, buf.elem, variation.as_ref());
        BufferComparison {
            name: buf.name.clone(),
            rtol: used.rtol,
            atol: used.atol,
            bad,
            count: buf.count,
            worst,
            spec_rtol: spec.rtol,
            spec_atol: spec.atol,
            basis,
            original_variation: variation,
        }
    }

    /// Which tolerance was used and why, in words.
    pub fn tolerance_note(&self) -> String {
        let used = format!("rtol={:e} atol={:e}", self.rtol, self.atol);
        let v = self.original_variation.as_ref();
        let runs = v.map(|v| v.runs).unwrap_or(ORIGINAL_RUNS);
        let differ = v.map(Variation::describe).unwrap_or_default();
        match self.basis {
            ToleranceBasis::Spec => format!("the spec's tolerance {used}"),
            ToleranceBasis::SpecCoversVariation => format!(
                "the spec's tolerance {used}, which covers {VARIATION_MULTIPLE}x the original's own variation (its {runs} runs {differ})"
            ),
            ToleranceBasis::OriginalVariation => {
                format!(
                    "{used}: {VARIATION_MULTIPLE}x the original's own run-to-run variation (its {runs} runs on the same inputs {differ}), wider than the spec's atol={:e}",
                    self.spec_atol
                )
            }
            ToleranceBasis::SpecOriginalRacy => {
                format!(
                    "the spec's tolerance {used}, not widened: the original's {runs} runs {differ}, more than reordered float additions explain (a race?)"
                )
            }
        }
    }

    /// `worst at element I: GOT where the REFERENCE gives WANT`, when an element failed.
    pub fn worst_note(&self, reference: &str) -> Option<String> {
        self.worst
            .as_ref()
            .map(|w| format!("worst at element {}: {:e} where the {reference} gives {:e}", w.index, w.got, w.reference))
    }

    /// `the original is nondeterministic: …` when its runs differed.
    pub fn nondeterminism_note(&self) -> Option<String> {
        let v = self.original_variation.as_ref()?;
        let why = if self.basis == ToleranceBasis::SpecOriginalRacy { "a race?" } else { "float atomics?" };
        Some(format!(
            "the original is nondeterministic: two runs on the same inputs {} in `{}` ({why})",
            v.describe(),
            self.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_spec::{Dir, Init};

    fn variation(max_abs_diff: f64, max_abs: f64) -> Variation {
        Variation { runs: 4, differing: 1, one_nan: 0, max_abs_diff, max_abs }
    }

    /// (elem, spec, the original's variation, the candidate's error) → (accepted, basis, atol used).
    fn check(
        elem: ElemType,
        spec: Tolerance,
        v: Option<Variation>,
        want: f64,
        got: f64,
    ) -> (bool, ToleranceBasis, f64) {
        let (used, basis) = tolerance_used(spec, elem, v.as_ref());
        assert_eq!(used.rtol, spec.rtol, "rtol is never widened");
        assert!(used.atol >= spec.atol, "never tighter than the spec");
        (used.accepts(want, got), basis, used.atol)
    }

    #[test]
    fn a_deterministic_original_keeps_the_spec_tolerance() {
        let spec = Tolerance::default_for(ElemType::Float);
        assert_eq!(check(ElemType::Float, spec, None, 1000.0, 1000.0 + 0.009), (true, ToleranceBasis::Spec, 1e-6));
        assert_eq!(check(ElemType::Float, spec, None, 1000.0, 1000.0 + 0.02), (false, ToleranceBasis::Spec, 1e-6));
    }

    #[test]
    fn a_float_atomic_original_widens_atol_to_the_multiple_of_its_variation() {
        let spec = Tolerance::default_for(ElemType::Float);
        // A sum of 16M floats near 2300 whose runs differ by up to 0.05.
        let v = Some(variation(0.05, 2300.0));
        assert_eq!(check(ElemType::Float, spec, v, 2300.0, 2300.39), (true, ToleranceBasis::OriginalVariation, 0.4));
        // Beyond 8x the variation (plus the spec's rtol × |want|, 0.023): rejected.
        assert!(!check(ElemType::Float, spec, v, 2300.0, 2300.0 + 0.4 + 0.024).0);
        assert!(!check(ElemType::Float, spec, v, 2300.0, f64::NAN).0);
    }

    #[test]
    fn a_variation_the_spec_already_covers_changes_nothing() {
        let spec = Tolerance { rtol: 1e-5, atol: 1e-3 };
        assert_eq!(
            check(ElemType::Double, spec, Some(variation(1e-4, 1.0)), 1.0, 1.0009),
            (true, ToleranceBasis::SpecCoversVariation, 1e-3)
        );
    }

    #[test]
    fn a_racy_original_cannot_make_candidates_pass() {
        let spec = Tolerance::default_for(ElemType::Float);
        // Differences of 5% of the largest value are not reordering.
        assert_eq!(
            check(ElemType::Float, spec, Some(variation(5.0, 100.0)), 100.0, 104.0),
            (false, ToleranceBasis::SpecOriginalRacy, 1e-6)
        );
        // NaN in one run only, infinite differences, and integer outputs neither.
        let nan = Variation { one_nan: 3, ..variation(1e-6, 1.0) };
        assert_eq!(check(ElemType::Float, spec, Some(nan), 1.0, 1.0 + 1e-6).1, ToleranceBasis::SpecOriginalRacy);
        assert_eq!(
            check(ElemType::Float, spec, Some(variation(f64::INFINITY, 1.0)), 1.0, 2.0).1,
            ToleranceBasis::SpecOriginalRacy
        );
        assert_eq!(
            check(ElemType::Int, Tolerance::EXACT, Some(variation(1.0, 1e9)), 5.0, 6.0),
            (false, ToleranceBasis::SpecOriginalRacy, 0.0)
        );
    }

    #[test]
    fn variation_is_the_most_any_later_run_differed() {
        let same = PairStats { max_abs: 10.0, ..PairStats::default() };
        assert_eq!(Variation::of_runs(&[same]), None, "identical bits: deterministic");
        let a = PairStats { differing: 2, max_abs_diff: 0.5, max_abs: 10.0, ..PairStats::default() };
        let b = PairStats { differing: 7, max_abs_diff: 0.25, max_abs: 10.0, ..PairStats::default() };
        let v = Variation::of_runs(&[a, same, b]).unwrap();
        assert_eq!((v.runs, v.differing, v.max_abs_diff, v.relative()), (4, 7, 0.5, 0.05));
        // +0 and -0 differ in bits but not in value.
        let zeros = PairStats { differing: 1, ..PairStats::default() };
        assert_eq!(Variation::of_runs(&[zeros]).unwrap().relative(), 0.0);
    }

    #[test]
    fn the_result_says_which_tolerance_it_used() {
        let buf = BufferArg { name: "out".into(), dir: Dir::Out, elem: ElemType::Float, count: 1, init: Init::Zeros };
        let spec = Tolerance::default_for(ElemType::Float);
        let v = variation(0.05, 2300.0);
        let c = BufferComparison::new(&buf, spec, Some(v), 0, None);
        expect_test::expect![[
            r#"rtol=1e-5 atol=4e-1: 8x the original's own run-to-run variation (its 4 runs on the same inputs differ by up to 5.00e-2 (2.2e-5 of its largest value)), wider than the spec's atol=1e-6"#
        ]]
        .assert_eq(&c.tolerance_note());
        expect_test::expect![[r#"the original is nondeterministic: two runs on the same inputs differ by up to 5.00e-2 (2.2e-5 of its largest value) in `out` (float atomics?)"#]]
            .assert_eq(&c.nondeterminism_note().unwrap());
        let plain = BufferComparison::new(&buf, spec, None, 0, None);
        assert_eq!(
            (plain.tolerance_note().as_str(), plain.nondeterminism_note()),
            ("the spec's tolerance rtol=1e-5 atol=1e-6", None)
        );
    }
}
