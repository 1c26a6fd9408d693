//! Parameter points: the variants one rewrite offers of a node (its launches,
//! vector widths, tiles) are one form with several points. The search makes
//! the form's most promising point a child of the node and the form's other
//! points children of that one, so the tree searches over them instead of a
//! flat list of near-equal siblings; a roofline prior (a lower bound on the
//! point's time) orders them and drops those that cannot beat the best
//! verified time before they are compiled.

use serde::{Deserialize, Serialize};

/// One point of a form: named integer parameters in the order the proposer
/// gives them (`block=256 grid=2112 vec=4`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Point {
    pub params: Vec<(String, u64)>,
}

impl Point {
    pub fn new<'a>(params: impl IntoIterator<Item = (&'a str, u64)>) -> Point {
        Point { params: params.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// What a proposal of a form's point carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tag {
    /// The form: proposals of one node with the same recipe and form are points of one form.
    pub form: String,
    pub point: Point,
    /// The roofline prior: no run of this point takes less than this many
    /// seconds (`f64::INFINITY`: it cannot run at all); `None` when unknown.
    pub lower_bound_s: Option<f64>,
}

impl Tag {
    /// Whether the point cannot beat `best_time_s`: its lower bound is at or past it.
    pub fn hopeless(&self, best_time_s: f64) -> bool {
        self.lower_bound_s.is_some_and(|lb| lb >= best_time_s)
    }
}

/// Sorts points by their lower bound, unknown ones last, ties in the given order.
pub(crate) fn by_prior<T>(items: &mut [T], tag: impl Fn(&T) -> Option<&Tag>) {
    items.sort_by(|a, b| {
        let key = |t: &T| tag(t).and_then(|t| t.lower_bound_s).unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(lb: Option<f64>) -> Tag {
        Tag { form: "F".into(), point: Point::new([("block", 256)]), lower_bound_s: lb }
    }

    #[test]
    fn points_sort_by_lower_bound_and_unknown_ones_go_last() {
        let mut v = vec![(0, tag(None)), (1, tag(Some(3.0))), (2, tag(Some(1.0))), (3, tag(Some(3.0)))];
        by_prior(&mut v, |(_, t)| Some(t));
        assert_eq!(v.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [2, 1, 3, 0]);
    }

    #[test]
    fn a_point_is_hopeless_when_its_bound_reaches_the_best_time() {
        assert!(tag(Some(2.0)).hopeless(2.0));
        assert!(tag(Some(f64::INFINITY)).hopeless(1e9));
        assert!(!tag(Some(1.0)).hopeless(2.0));
        assert!(!tag(None).hopeless(0.0));
        assert_eq!(Point::new([("block", 256), ("grid", 132)]).to_string(), "block=256 grid=132");
    }
}
