//! Element and scalar types: the spec's type names, their C spellings and sizes.

use serde::{Deserialize, Serialize};

/// The element type of a buffer, as written in a spec (`float[N]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    Float,
    Double,
    Half,
    Bfloat16,
    Int,
    Unsigned,
    Int8,
    Uint8,
    Int64,
}

impl ElemType {
    pub const ALL: [ElemType; 9] = [
        ElemType::Float,
        ElemType::Double,
        ElemType::Half,
        ElemType::Bfloat16,
        ElemType::Int,
        ElemType::Unsigned,
        ElemType::Int8,
        ElemType::Uint8,
        ElemType::Int64,
    ];

    /// The name used in spec lines.
    pub fn spec_name(self) -> &'static str {
        match self {
            ElemType::Float => "float",
            ElemType::Double => "double",
            ElemType::Half => "half",
            ElemType::Bfloat16 => "bfloat16",
            ElemType::Int => "int",
            ElemType::Unsigned => "unsigned",
            ElemType::Int8 => "int8",
            ElemType::Uint8 => "uint8",
            ElemType::Int64 => "int64",
        }
    }

    pub fn from_spec_name(name: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.spec_name() == name)
    }

    pub fn size_bytes(self) -> u64 {
        match self {
            ElemType::Int8 | ElemType::Uint8 => 1,
            ElemType::Half | ElemType::Bfloat16 => 2,
            ElemType::Float | ElemType::Int | ElemType::Unsigned => 4,
            ElemType::Double | ElemType::Int64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElemType::Float | ElemType::Double | ElemType::Half | ElemType::Bfloat16)
    }

    /// The inclusive range of values an integer type holds.
    pub fn int_range(self) -> (i64, i64) {
        match self {
            ElemType::Int => (i32::MIN as i64, i32::MAX as i64),
            ElemType::Unsigned => (0, u32::MAX as i64),
            ElemType::Int8 => (i8::MIN as i64, i8::MAX as i64),
            ElemType::Uint8 => (0, u8::MAX as i64),
            _ => (i64::MIN, i64::MAX),
        }
    }

    /// The C spellings of this type that a pointer parameter may have.
    fn c_names(self) -> &'static [&'static str] {
        match self {
            ElemType::Float => &["float"],
            ElemType::Double => &["double"],
            ElemType::Half => &["__half", "half"],
            ElemType::Bfloat16 => &["__nv_bfloat16", "nv_bfloat16", "bfloat16"],
            ElemType::Int => &["int", "int32_t", "signed", "signed int"],
            ElemType::Unsigned => &["unsigned", "unsigned int", "uint32_t"],
            ElemType::Int8 => &["int8_t", "signed char", "char"],
            ElemType::Uint8 => &["uint8_t", "unsigned char"],
            ElemType::Int64 => &["int64_t", "long long", "long long int", "long"],
        }
    }

    /// The usual C spelling (`__half`, `int64_t`), for code that declares a pointer to this type.
    pub fn c_name(self) -> &'static str {
        self.c_names()[0]
    }

    /// The element type a C pointee type names, e.g. `__half` → `Half`.
    pub fn from_c(c_type: &str) -> Option<ElemType> {
        let base = base_c_type(c_type);
        ElemType::ALL.into_iter().find(|t| t.c_names().contains(&base.as_str()))
    }
}

/// The type of a scalar kernel parameter, which fixes how its value is packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarType {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    Bf16,
    F32,
    F64,
}

impl ScalarType {
    pub fn from_c(c_type: &str) -> Option<ScalarType> {
        Some(match base_c_type(c_type).as_str() {
            "bool" => ScalarType::Bool,
            "char" | "signed char" | "int8_t" => ScalarType::I8,
            "unsigned char" | "uint8_t" => ScalarType::U8,
            "short" | "int16_t" => ScalarType::I16,
            "unsigned short" | "uint16_t" => ScalarType::U16,
            "int" | "signed" | "signed int" | "int32_t" => ScalarType::I32,
            "unsigned" | "unsigned int" | "uint32_t" => ScalarType::U32,
            "long" | "long long" | "long long int" | "int64_t" | "ptrdiff_t" | "ssize_t" => ScalarType::I64,
            "unsigned long" | "unsigned long long" | "uint64_t" | "size_t" => ScalarType::U64,
            "__half" | "half" => ScalarType::F16,
            "__nv_bfloat16" | "nv_bfloat16" => ScalarType::Bf16,
            "float" => ScalarType::F32,
            "double" => ScalarType::F64,
            _ => return None,
        })
    }

    /// The usual C spelling of a parameter of this type.
    pub fn c_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I8 => "int8_t",
            ScalarType::U8 => "uint8_t",
            ScalarType::I16 => "int16_t",
            ScalarType::U16 => "uint16_t",
            ScalarType::I32 => "int",
            ScalarType::U32 => "unsigned int",
            ScalarType::I64 => "long long",
            ScalarType::U64 => "unsigned long long",
            ScalarType::F16 => "__half",
            ScalarType::Bf16 => "__nv_bfloat16",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::Bf16 | ScalarType::F32 | ScalarType::F64)
    }

    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::Bf16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 => 8,
        }
    }

    /// The inclusive range of an integer type (u64 is limited to what an i64 expression reaches).
    pub fn int_range(self) -> (i64, i64) {
        match self {
            ScalarType::Bool => (0, 1),
            ScalarType::I8 => (i8::MIN as i64, i8::MAX as i64),
            ScalarType::U8 => (0, u8::MAX as i64),
            ScalarType::I16 => (i16::MIN as i64, i16::MAX as i64),
            ScalarType::U16 => (0, u16::MAX as i64),
            ScalarType::I32 => (i32::MIN as i64, i32::MAX as i64),
            ScalarType::U32 => (0, u32::MAX as i64),
            ScalarType::U64 => (0, i64::MAX),
            _ => (i64::MIN, i64::MAX),
        }
    }
}

/// `const float`, `float const`, `volatile unsigned  int` → `float`, `unsigned int`.
pub fn base_c_type(c_type: &str) -> String {
    c_type
        .split(|c: char| c.is_whitespace() || c == '*' || c == '&')
        .filter(|w| !w.is_empty() && !matches!(*w, "const" | "volatile" | "__restrict__" | "__restrict" | "restrict"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_c_types() {
        assert_eq!(ElemType::from_c("const float"), Some(ElemType::Float));
        assert_eq!(ElemType::from_c("__half"), Some(ElemType::Half));
        assert_eq!(ElemType::from_c("const __nv_bfloat16 __restrict__"), Some(ElemType::Bfloat16));
        assert_eq!(ElemType::from_c("T"), None);
        assert_eq!(ScalarType::from_c("const unsigned  int"), Some(ScalarType::U32));
        assert_eq!(ScalarType::from_c("size_t"), Some(ScalarType::U64));
        assert_eq!(ScalarType::from_c("float4"), None);
        for t in ElemType::ALL {
            assert_eq!(ElemType::from_c(t.c_name()), Some(t), "{t:?}");
        }
        for t in [
            ScalarType::Bool,
            ScalarType::I8,
            ScalarType::U16,
            ScalarType::I32,
            ScalarType::U32,
            ScalarType::I64,
            ScalarType::U64,
            ScalarType::F16,
            ScalarType::Bf16,
            ScalarType::F32,
            ScalarType::F64,
        ] {
            assert_eq!(ScalarType::from_c(t.c_name()), Some(t), "{t:?}");
        }
    }
}
