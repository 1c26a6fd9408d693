//! Element types of pointers and arrays, and their sizes. A template
//! parameter or an unknown type has no size: tools that need one stay silent.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElemType {
    /// The base type words without qualifiers: `float`, `float4`, `T`.
    pub name: String,
    pub bytes: Option<u32>,
}

impl ElemType {
    pub fn new(name: &str) -> ElemType {
        let name = base_type(name);
        ElemType { bytes: size_of(&name), name }
    }
    pub fn unknown() -> ElemType {
        ElemType { name: "?".into(), bytes: None }
    }
    /// Whether it is a floating type (for accumulator and FP64 reasoning).
    pub fn is_double(&self) -> bool {
        self.name == "double"
    }
}

/// `const float * __restrict__` → `float`; `unsigned int` stays two words.
pub fn base_type(ty: &str) -> String {
    let ty = ty.split('*').next().unwrap_or(ty).replace('&', " ");
    ty.split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "const"
                    | "volatile"
                    | "__restrict__"
                    | "restrict"
                    | "__restrict"
                    | "struct"
                    | "__shared__"
                    | "static"
                    | "extern"
                    | "__device__"
                    | "__constant__"
                    | "typename"
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("std::")
        .to_string()
}

/// Size in bytes of a CUDA scalar or vector type; `None` for anything else.
pub fn size_of(base: &str) -> Option<u32> {
    Some(match base {
        "char" | "signed char" | "unsigned char" | "int8_t" | "uint8_t" | "bool" | "__nv_fp8_e4m3"
        | "__nv_fp8_e5m2" => 1,
        "short" | "unsigned short" | "int16_t" | "uint16_t" | "half" | "__half" | "__nv_bfloat16" | "nv_bfloat16"
        | "char2" | "uchar2" => 2,
        "int" | "unsigned" | "unsigned int" | "float" | "int32_t" | "uint32_t" | "half2" | "__half2"
        | "__nv_bfloat162" | "nv_bfloat162" | "char4" | "uchar4" | "short2" => 4,
        "long" | "unsigned long" | "long long" | "unsigned long long" | "long int" | "int64_t" | "uint64_t"
        | "size_t" | "ptrdiff_t" | "double" | "float2" | "int2" | "uint2" | "short4" => 8,
        "float3" | "int3" | "uint3" => 12,
        "float4" | "int4" | "uint4" | "double2" | "longlong2" => 16,
        "double4" | "longlong4" => 32,
        _ => return None,
    })
}

/// Whether a declared scalar type is an integer (index-like) type.
pub fn is_integer(base: &str) -> bool {
    size_of(base).is_some()
        && !matches!(base, "float" | "double" | "half" | "__half" | "__nv_bfloat16" | "nv_bfloat16")
        && !base.contains('2')
        && !base.contains('3')
        && !base.contains('4')
        || matches!(base, "int64_t" | "uint64_t" | "int32_t" | "uint32_t" | "int16_t" | "uint16_t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(ElemType::new("const float * __restrict__").bytes, Some(4));
        assert_eq!(ElemType::new("const float4*").bytes, Some(16));
        assert_eq!(ElemType::new("T").bytes, None);
        assert_eq!(ElemType::new("unsigned int").name, "unsigned int");
        assert!(is_integer("size_t") && is_integer("int") && !is_integer("float"));
    }
}
