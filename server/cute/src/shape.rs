//! What a detected matrix product is: its sizes, element types, layouts and
//! which kernel parameters hold its operands.

use serde::Serialize;

/// An element type the generated GEMM handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Elem {
    Float,
    Half,
    Bf16,
}

impl Elem {
    /// From a C base type (`float`, `__half`, `half`, `__nv_bfloat16`, `nv_bfloat16`).
    pub fn from_c(base: &str) -> Option<Elem> {
        match base.trim() {
            "float" => Some(Elem::Float),
            "__half" | "half" => Some(Elem::Half),
            "__nv_bfloat16" | "nv_bfloat16" => Some(Elem::Bf16),
            _ => None,
        }
    }

    /// The CuTe/CUTLASS type with the same bits.
    pub fn cute(self) -> &'static str {
        match self {
            Elem::Float => "float",
            Elem::Half => "cute::half_t",
            Elem::Bf16 => "cute::bfloat16_t",
        }
    }
}

/// How a matrix is stored: row-major (`X[r * cols + c]`) or column-major (`X[r + c * rows]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Major {
    Row,
    Col,
}

/// One size of the product: a C expression valid inside the kernel (a
/// parameter name or a literal) and its value for the spec's launch, when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dim {
    pub expr: String,
    pub value: Option<i64>,
}

/// `C = alpha * A·B + beta * C` with these scalar parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scale {
    pub alpha: String,
    pub beta: String,
}

/// C (M×N) = A (M×K) · B (K×N), as one kernel computes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    pub m: Dim,
    pub n: Dim,
    pub k: Dim,
    /// The pointer parameters holding A, B and C.
    pub a: String,
    pub b: String,
    pub c: String,
    pub a_type: Elem,
    pub b_type: Elem,
    pub c_type: Elem,
    pub a_layout: Major,
    pub b_layout: Major,
    pub c_layout: Major,
    /// `None`: plain `C = A·B` (C is only written).
    pub alpha_beta: Option<Scale>,
}

impl GemmShape {
    /// Whether A and B are K-major in CuTe's (MN, K) views: row-major A, column-major B.
    pub(crate) fn k_major(&self) -> (bool, bool) {
        (self.a_layout == Major::Row, self.b_layout == Major::Col)
    }
}
