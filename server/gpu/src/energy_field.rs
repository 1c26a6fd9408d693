//! `KernelRun::energy` as two plain fields, `energy` (the measurement or
//! null) and `energy_error` (why not, or null), rather than serde's
//! `{"Ok": …}` / `{"Err": …}`: the CLI's JSON output is read by people and
//! scripts, and the worker protocol uses the same shape both ways.

use crate::job::Energy;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize)]
struct Out<'a> {
    energy: Option<&'a Energy>,
    energy_error: Option<&'a str>,
}

#[derive(Deserialize)]
struct In {
    #[serde(default)]
    energy: Option<Energy>,
    #[serde(default)]
    energy_error: Option<String>,
}

pub fn serialize<S: Serializer>(v: &Result<Energy, String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Ok(e) => Out { energy: Some(e), energy_error: None },
        Err(why) => Out { energy: None, energy_error: Some(why) },
    }
    .serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Result<Energy, String>, D::Error> {
    let fields = In::deserialize(d)?;
    Ok(match (fields.energy, fields.energy_error) {
        (Some(e), _) => Ok(e),
        (None, why) => Err(why.unwrap_or_else(|| "energy was not measured".into())),
    })
}

#[cfg(test)]
mod tests {
    use crate::job::{Energy, KernelRun, Timing};

    fn run(energy: Result<Energy, String>) -> KernelRun {
        let timing = Timing { runs: 20, warmup: 3, median_ms: 0.5, min_ms: 0.4, max_ms: 0.6, stddev_ms: 0.01 };
        KernelRun {
            function: "k".into(),
            timing,
            clocks: None,
            energy,
            outputs: Vec::new(),
            dram_gbps_estimate: 1.0,
            tflops: None,
        }
    }

    #[test]
    fn energy_is_a_plain_field_and_an_error_field_and_round_trips() {
        let measured = Energy { joules_per_launch: 0.25, average_watts: 300.0, launches: 40, window_s: 1.0 };
        for (r, fields) in [
            (
                run(Ok(measured)),
                r#""energy":{"joules_per_launch":0.25,"average_watts":300.0,"launches":40,"window_s":1.0},"energy_error":null"#,
            ),
            (run(Err("NVML is not available".into())), r#""energy":null,"energy_error":"NVML is not available""#),
        ] {
            let text = serde_json::to_string(&r).unwrap();
            assert!(text.contains(fields) && !text.contains(r#""Ok""#) && !text.contains(r#""Err""#), "{text}");
            assert_eq!(serde_json::from_str::<KernelRun>(&text).unwrap(), r, "{text}");
        }
    }
}
