//! Integer polynomials over the values a kernel computes with: thread and
//! block indices, loop counters, uniform symbols (parameters, macros) and
//! opaque values the model cannot see through. An index is "affine" when no
//! monomial multiplies two thread-varying atoms; its lane coefficient is what
//! neighbouring lanes differ by.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// How far a value varies across the threads of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dep {
    /// The same for every thread of the block (parameters, `blockIdx`, loop counters of uniform loops).
    Uniform,
    /// The same within a warp, different between warps (the warp id).
    Warp,
    /// Different between lanes of a warp.
    Thread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub fn from_field(field: &str) -> Option<Dim> {
        match field {
            "x" => Some(Dim::X),
            "y" => Some(Dim::Y),
            "z" => Some(Dim::Z),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }
}

/// One indeterminate of a polynomial.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Atom {
    /// `threadIdx.<d>`
    Tid(Dim),
    /// The lane within the warp (`tid % 32`, `tid & 31` of a linear thread index).
    Lane,
    /// The warp within the block (`tid / 32`): uniform in a warp.
    Warp,
    /// A loop's counter: the variable itself when it starts at 0 with step 1,
    /// else the trip number (`#i`) the variable is `init + step * #i` of.
    Loop(String),
    /// `blockIdx.<d>`
    Bid(Dim),
    /// `blockDim.<d>`
    Bdim(Dim),
    /// `gridDim.<d>`
    Gdim(Dim),
    /// A uniform value known by name: a scalar parameter, a macro or constant without a value.
    Sym(String),
    /// A value the model does not see through: its text, how it varies, and
    /// whether it came from memory (data-dependent: `idx[i]`).
    Opaque { text: String, dep: Dep, data: bool },
}

impl Atom {
    pub fn dep(&self) -> Dep {
        match self {
            Atom::Tid(_) | Atom::Lane => Dep::Thread,
            Atom::Warp => Dep::Warp,
            Atom::Opaque { dep, .. } => *dep,
            _ => Dep::Uniform,
        }
    }
    /// Whether neighbouring lanes see different values of the atom.
    pub fn lane_varying(&self) -> bool {
        self.dep() == Dep::Thread
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Atom::Tid(d) => write!(f, "tid.{}", d.name()),
            Atom::Lane => write!(f, "lane"),
            Atom::Warp => write!(f, "warp"),
            Atom::Loop(name) => write!(f, "{name}"),
            Atom::Bid(d) => write!(f, "bid.{}", d.name()),
            Atom::Bdim(d) => write!(f, "bdim.{}", d.name()),
            Atom::Gdim(d) => write!(f, "gdim.{}", d.name()),
            Atom::Sym(s) => write!(f, "{s}"),
            Atom::Opaque { text, .. } => write!(f, "⟨{text}⟩"),
        }
    }
}

/// A product of atoms, sorted (a multiset); empty for the constant term.
pub type Monomial = Vec<Atom>;

/// Monomials past this size collapse into one opaque value, so long unrolled
/// sums cannot blow up.
const MAX_TERMS: usize = 24;

/// Sum of integer multiples of monomials.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Poly {
    pub terms: BTreeMap<Monomial, i64>,
}

impl Poly {
    pub fn zero() -> Poly {
        Poly::default()
    }
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::zero();
        if c != 0 {
            p.terms.insert(Vec::new(), c);
        }
        p
    }
    pub fn atom(a: Atom) -> Poly {
        let mut p = Poly::zero();
        p.terms.insert(vec![a], 1);
        p
    }
    pub fn opaque(text: &str, dep: Dep, data: bool) -> Poly {
        let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let text =
            if text.chars().count() > 40 { format!("{}…", text.chars().take(39).collect::<String>()) } else { text };
        Poly::atom(Atom::Opaque { text, dep, data })
    }
    pub fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }
    pub fn as_constant(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }
    pub fn constant_term(&self) -> i64 {
        self.terms.get(&Vec::new()).copied().unwrap_or(0)
    }
    pub fn dep(&self) -> Dep {
        self.atoms().map(Atom::dep).max().unwrap_or(Dep::Uniform)
    }
    pub fn atoms(&self) -> impl Iterator<Item = &Atom> {
        self.terms.keys().flatten()
    }
    /// Whether some atom came from memory and varies across threads (a gather: `x[idx[i]]`).
    pub fn data_dependent(&self) -> bool {
        self.atoms().any(|a| matches!(a, Atom::Opaque { data: true, dep, .. } if *dep != Dep::Uniform))
    }
    /// Affine in the lane-varying atoms: no monomial holds two of them (or one
    /// squared), and no opaque atom varies across lanes. Warp-uniform values
    /// (the warp id, `(tid / 32) * C`) are constant across a warp's lanes.
    pub fn is_affine(&self) -> bool {
        self.terms.keys().all(|m| {
            let varying: Vec<&Atom> = m.iter().filter(|a| a.dep() == Dep::Thread).collect();
            varying.len() <= 1 && !varying.iter().any(|a| matches!(a, Atom::Opaque { .. }))
        })
    }

    fn add_term(&mut self, m: Monomial, c: i64) {
        let entry = self.terms.entry(m).or_insert(0);
        *entry = entry.wrapping_add(c);
        if *entry == 0 {
            self.terms.retain(|_, c| *c != 0);
        }
    }

    pub fn add(&self, other: &Poly) -> Poly {
        let mut out = self.clone();
        for (m, c) in &other.terms {
            out.add_term(m.clone(), *c);
        }
        out.bounded()
    }
    pub fn neg(&self) -> Poly {
        Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c.wrapping_neg())).collect() }
    }
    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.neg())
    }
    pub fn scale(&self, k: i64) -> Poly {
        if k == 0 {
            return Poly::zero();
        }
        Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c.wrapping_mul(k))).collect() }
    }
    pub fn mul(&self, other: &Poly) -> Poly {
        let mut out = Poly::zero();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m: Monomial = m1.iter().chain(m2).cloned().collect();
                m.sort();
                out.add_term(m, c1.wrapping_mul(*c2));
            }
        }
        out.bounded()
    }
    /// Exact division by a constant when every coefficient divides.
    pub fn div_exact(&self, k: i64) -> Option<Poly> {
        if k == 0 || self.terms.values().any(|c| c % k != 0) {
            return None;
        }
        Some(Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c / k)).collect() })
    }

    fn bounded(self) -> Poly {
        if self.terms.len() <= MAX_TERMS {
            return self;
        }
        let dep = self.dep();
        let data = self.atoms().any(|a| matches!(a, Atom::Opaque { data: true, .. }));
        Poly::opaque("long expression", dep, data)
    }

    /// The coefficient of `atom` (the sum of the monomials holding it once, with it taken out).
    pub fn coefficient(&self, atom: &Atom) -> Poly {
        let mut out = Poly::zero();
        for (m, c) in &self.terms {
            if let Some(pos) = m.iter().position(|a| a == atom) {
                let mut rest = m.clone();
                rest.remove(pos);
                out.add_term(rest, *c);
            }
        }
        out
    }
    /// The terms that hold no atom for which `pred` is true.
    pub fn without(&self, pred: impl Fn(&Atom) -> bool) -> Poly {
        Poly { terms: self.terms.iter().filter(|(m, _)| !m.iter().any(&pred)).map(|(m, c)| (m.clone(), *c)).collect() }
    }
    /// The terms holding an atom for which `pred` is true.
    pub fn only(&self, pred: impl Fn(&Atom) -> bool) -> Poly {
        Poly { terms: self.terms.iter().filter(|(m, _)| m.iter().any(&pred)).map(|(m, c)| (m.clone(), *c)).collect() }
    }
    /// Replaces atoms by values (each atom → a polynomial).
    pub fn substitute(&self, value: impl Fn(&Atom) -> Option<Poly>) -> Poly {
        let mut out = Poly::zero();
        for (m, c) in &self.terms {
            let mut term = Poly::constant(*c);
            for a in m {
                let v = value(a).unwrap_or_else(|| Poly::atom(a.clone()));
                term = term.mul(&v);
            }
            out = out.add(&term);
        }
        out
    }
    /// The largest integer dividing every coefficient (0 for the zero polynomial).
    pub fn content(&self) -> i64 {
        self.terms.values().fold(0i64, |g, c| gcd(g, c.unsigned_abs() as i64))
    }
}

pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.terms.is_empty() {
            return write!(f, "0");
        }
        // Constant last, the rest in atom order (thread atoms first).
        let mut first = true;
        let constant = self.terms.get(&Vec::new()).copied();
        for (m, c) in self.terms.iter().filter(|(m, _)| !m.is_empty()) {
            let (sign, abs) = if *c < 0 { ("-", c.unsigned_abs()) } else { ("+", *c as u64) };
            if first {
                if sign == "-" {
                    write!(f, "-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            first = false;
            if abs != 1 {
                write!(f, "{abs}*")?;
            }
            let names: Vec<String> = m.iter().map(|a| a.to_string()).collect();
            write!(f, "{}", names.join("*"))?;
        }
        if let Some(c) = constant {
            if first {
                write!(f, "{c}")?;
            } else if c < 0 {
                write!(f, " - {}", c.unsigned_abs())?;
            } else {
                write!(f, " + {c}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_display() {
        let tid = Poly::atom(Atom::Tid(Dim::X));
        let c = Poly::atom(Atom::Sym("C".into()));
        let row = Poly::atom(Atom::Bid(Dim::X)).mul(&Poly::atom(Atom::Bdim(Dim::X))).add(&tid);
        let idx = row.mul(&c).add(&Poly::atom(Atom::Loop("k".into()))).add(&Poly::constant(-1));
        assert_eq!(idx.to_string(), "tid.x*C + k + bid.x*bdim.x*C - 1");
        assert_eq!(idx.coefficient(&Atom::Tid(Dim::X)).to_string(), "C");
        assert!(idx.is_affine());
        assert!(!tid.mul(&tid).is_affine());
        assert_eq!(idx.sub(&idx).to_string(), "0");
        assert_eq!(Poly::constant(6).add(&tid.scale(4)).content(), 2);
    }
}
