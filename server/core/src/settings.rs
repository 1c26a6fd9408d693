//! User settings, as the editor sends them (`initializationOptions` and
//! `workspace/configuration` section "kernelpro") or the CLI builds them.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Nothing is compiled, run or sent anywhere until the client says the workspace is trusted.
    pub trusted: bool,
    pub nvcc: Option<PathBuf>,
    pub ncu: Option<PathBuf>,
    /// Target architecture, e.g. `sm_90`.
    pub arch: String,
    pub include_paths: Vec<PathBuf>,
    pub extra_flags: Vec<String>,
    pub compile_timeout_secs: u64,
    /// Block size assumed for occupancy when a kernel has no launch spec.
    pub block_size: u32,
    pub profile_on_save: bool,
    pub clock_control: String,
    /// Prefix for the GPU child process, e.g. `["srun", "--gres=gpu:1", "--"]`.
    pub runner: Vec<String>,
    pub run_timeout_secs: u64,
    pub profile_timeout_secs: u64,
    pub llm: LlmSettings,
    pub optimize: OptimizeSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            trusted: false,
            nvcc: None,
            ncu: None,
            arch: "sm_90".into(),
            include_paths: Vec::new(),
            extra_flags: Vec::new(),
            compile_timeout_secs: 60,
            block_size: 256,
            profile_on_save: false,
            clock_control: "none".into(),
            runner: Vec::new(),
            run_timeout_secs: 10,
            profile_timeout_secs: 300,
            llm: LlmSettings::default(),
            optimize: OptimizeSettings::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LlmSettings {
    /// Nothing is sent to a model unless this is true for the workspace.
    pub enabled: bool,
    /// `openai` (any OpenAI-compatible server) or `anthropic`.
    pub provider: String,
    pub endpoint: Option<String>,
    pub model: Option<String>,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings { enabled: false, provider: "openai".into(), endpoint: None, model: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OptimizeSettings {
    /// Evaluations (compile + verify + time) per search.
    pub budget: u32,
    pub time_secs: u64,
    /// `gpu` (the harness) or `stub:SPEEDUP` (a fake evaluator, for tests and demos).
    pub evaluator: String,
    /// Measure energy (about 1 s per candidate) so equal-speed candidates are ranked by it.
    pub energy: bool,
    /// GPUs (CUDA device indices) the candidates of an iteration run on in
    /// parallel, one job per GPU at a time; the baseline runs on the first.
    pub devices: Vec<u32>,
    /// Profile the original (two stages, a few seconds) before the search so
    /// the recipes answering its measured findings go first.
    pub profile_original: bool,
}

impl Default for OptimizeSettings {
    fn default() -> Self {
        OptimizeSettings { budget: 60, time_secs: 600, evaluator: "gpu".into(), energy: true, devices: vec![0], profile_original: true }
    }
}

impl Settings {
    /// `base` updated by the fields of a JSON value; a mistyped field is skipped
    /// (and reported), so one bad setting never disables the rest.
    pub fn from_json(base: &Settings, value: &serde_json::Value) -> (Settings, Vec<String>) {
        let mut problems = Vec::new();
        let Some(obj) = value.as_object() else {
            if !value.is_null() {
                problems.push("settings must be a JSON object; keeping the current ones".to_string());
            }
            return (base.clone(), problems);
        };
        let mut merged = serde_json::to_value(base).expect("settings serialize");
        let target = merged.as_object_mut().expect("object");
        for (key, val) in obj {
            if !target.contains_key(key) {
                continue;
            }
            let mut candidate = target.clone();
            candidate.insert(key.clone(), val.clone());
            match serde_json::from_value::<Settings>(serde_json::Value::Object(candidate)) {
                Ok(_) => {
                    target.insert(key.clone(), val.clone());
                }
                Err(e) => problems.push(format!("setting kernelpro.{key} ignored: {e}")),
            }
        }
        let settings = serde_json::from_value(merged).unwrap_or_else(|_| base.clone());
        (settings, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_field_keeps_the_others() {
        let (s, problems) = Settings::from_json(&Settings::default(), &serde_json::json!({"arch": "sm_80", "blockSize": "big", "trusted": true}));
        assert_eq!(s.arch, "sm_80");
        assert!(s.trusted);
        assert_eq!(s.block_size, 256);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("blockSize"));
    }
}
