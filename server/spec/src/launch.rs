//! The resolved launch: everything the harness needs to run one kernel.

use crate::types::{ElemType, ScalarType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Seed used when a spec has no `seed = N`.
pub const DEFAULT_SEED: u64 = 42;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    In,
    Out,
    Inout,
}

impl Dir {
    /// Whether the kernel's result lives in this buffer (compared and checksummed).
    pub fn is_output(self) -> bool {
        self != Dir::In
    }
}

/// How a buffer is filled before a run. `out` buffers ignore it: they are
/// filled with NaN (integers: 0x7f bytes) so unwritten elements show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    Uniform { lo: f64, hi: f64 },
    Randint { lo: i64, hi: i64 },
    Zeros,
    Ones,
    Iota,
    Fill { value: f64 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferArg {
    pub name: String,
    pub dir: Dir,
    pub elem: ElemType,
    pub count: u64,
    pub init: Init,
}

impl BufferArg {
    pub fn size_bytes(&self) -> u64 {
        self.count * self.elem.size_bytes()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarValue {
    I64(i64),
    F64(f64),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalarArg {
    pub name: String,
    /// The parameter's C type, which fixes how the value is packed.
    pub ty: ScalarType,
    pub value: ScalarValue,
}

/// One kernel argument, in parameter order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Arg {
    Buffer(BufferArg),
    Scalar(ScalarArg),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Tolerance {
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0 };

    /// The defaults when a spec has no `check` line: 1e-5/1e-6 for float and
    /// double, looser for the 16-bit types (one rounding step of their
    /// mantissa), exact for integers.
    pub fn default_for(elem: ElemType) -> Tolerance {
        match elem {
            ElemType::Float | ElemType::Double => Tolerance { rtol: 1e-5, atol: 1e-6 },
            ElemType::Half => Tolerance { rtol: 1e-3, atol: 1e-3 },
            ElemType::Bfloat16 => Tolerance { rtol: 1e-2, atol: 1e-2 },
            _ => Tolerance::EXACT,
        }
    }

    /// Whether `got` is close enough to `want` (`|got - want| <= atol + rtol*|want|`; NaN never is).
    pub fn accepts(&self, want: f64, got: f64) -> bool {
        if want == got {
            return true;
        }
        (got - want).abs() <= self.atol + self.rtol * want.abs()
    }
}

/// A `tune NAME in [...]` let: the optimizer may pick any candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tunable {
    pub name: String,
    pub candidates: Vec<i64>,
    /// The value used for this launch (an override, else the first candidate).
    pub value: i64,
}

/// `instantiate = NAME<args>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instantiation {
    pub name: String,
    pub args: Vec<String>,
}

impl Instantiation {
    /// `name<a, b>`, the form to put in an explicit instantiation.
    pub fn text(&self) -> String {
        format!("{}<{}>", self.name, self.args.join(", "))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory.
    pub smem: u32,
    pub args: Vec<Arg>,
    /// From `check`; `None` means [`Tolerance::default_for`] per buffer.
    pub check: Option<Tolerance>,
    pub seed: u64,
    pub tunables: Vec<Tunable>,
    pub instantiate: Option<Instantiation>,
    /// `op = ...` verbatim (e.g. `gemm M N K row`), a hint for FLOP counts.
    pub op: Option<String>,
    /// Every `let`, `tune` and integer template argument with its value.
    pub lets: BTreeMap<String, i64>,
}

impl LaunchSpec {
    pub fn tolerance_for(&self, elem: ElemType) -> Tolerance {
        self.check.unwrap_or_else(|| Tolerance::default_for(elem))
    }

    pub fn buffers(&self) -> impl Iterator<Item = &BufferArg> {
        self.args.iter().filter_map(|a| match a {
            Arg::Buffer(b) => Some(b),
            Arg::Scalar(_) => None,
        })
    }

    /// The integer scalar arguments, by parameter name (what the kernel model
    /// and the work units substitute for a launch).
    pub fn int_scalars(&self) -> Vec<(String, i64)> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Scalar(s) => match s.value {
                    ScalarValue::I64(v) => Some((s.name.clone(), v)),
                    _ => None,
                },
                Arg::Buffer(_) => None,
            })
            .collect()
    }
}
