//! JSON for measured values that may be NaN or infinite.
//!
//! JSON has no NaN or infinity: serde_json writes them as `null` and then
//! cannot read `null` back as an `f64`, so a kernel whose output sums to NaN
//! (an unwritten or overflowing buffer, a legitimate result to report) would
//! turn the worker's whole reply unreadable. Non-finite values travel as the
//! strings `"NaN"`, `"inf"` and `"-inf"`; finite ones stay numbers.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else if v.is_nan() {
        s.serialize_str("NaN")
    } else if *v > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    Number(f64),
    Text(String),
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Wire::deserialize(d)? {
        Wire::Number(v) => Ok(v),
        Wire::Text(t) => match t.as_str() {
            "NaN" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            other => {
                Err(serde::de::Error::custom(format!("expected a number, \"NaN\", \"inf\" or \"-inf\", got {other:?}")))
            }
        },
    }
}

/// The same for `Option<f64>` fields.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => super::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    #[derive(Deserialize)]
    struct Wrapped(#[serde(with = "super")] f64);

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<Wrapped>::deserialize(d)?.map(|w| w.0))
    }
}
