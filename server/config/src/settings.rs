//! User settings, as the editor sends them (`initializationOptions` and
//! `workspace/configuration` section "kernelpro") or the CLI builds them.
//!
//! Where a setting may come from: `initializationOptions` are the user's own
//! (the client builds them from its user configuration when it starts the
//! server), so [`Settings::from_init_options`] takes every field. Later
//! updates (`workspace/didChangeConfiguration`, `workspace/configuration`)
//! may carry a workspace's or folder's values (a repository's
//! `.vscode/settings.json`), so [`Settings::from_json`] keeps the fields that
//! decide where the LLM key and the source go ([`USER_ONLY`]) as they were:
//! they can be switched off there, never on or elsewhere.

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
    /// Which profiler `profile` and profile-on-save use: `auto` (in-process
    /// CUPTI where it builds and runs, else ncu), `cupti` or `ncu`.
    pub profile_backend: String,
    pub llm: LlmSettings,
    pub optimize: OptimizeSettings,
    /// Folders whose `.venv` tool discovery may search: the client's workspace
    /// folders (LSP) or the checked file's folders (CLI). Never a setting, and
    /// used only while `trusted` (see `toolchain::Env::for_settings`).
    #[serde(skip)]
    pub project_roots: Vec<PathBuf>,
    /// The words of the client the messages are written for, chosen by the
    /// adapter (`lsp` from the LSP `clientInfo`, the CLI). Never a setting.
    #[serde(skip)]
    pub words: crate::words::Words,
}

/// Members of the settings object that are not settings: the LLM key travels
/// in `initializationOptions` beside them, and `kernelpro` is the section name
/// of clients that nest the settings in it.
const NOT_SETTINGS: [&str; 2] = ["llmKey", "kernelpro"];

/// Settings taken only from user-level configuration: they decide where the
/// LLM key and the kernel source are sent.
pub const USER_ONLY: [&str; 3] = ["llm.enabled", "llm.provider", "llm.endpoint"];

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
            profile_backend: "auto".into(),
            llm: LlmSettings::default(),
            optimize: OptimizeSettings::default(),
            project_roots: Vec::new(),
            words: crate::words::Words::default(),
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
    /// `gpu` (the harness) or `stub:SPEEDUP[:LAUNCH_SPEEDUP]` (a fake evaluator, for
    /// tests and demos; the second speedup for candidates that change the launch).
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
        OptimizeSettings {
            budget: 60,
            time_secs: 600,
            evaluator: "gpu".into(),
            energy: true,
            devices: vec![0],
            profile_original: true,
        }
    }
}

impl Settings {
    /// `base` updated by `initializationOptions`: user-level, so every field.
    /// Both shapes clients send are read: the settings themselves
    /// (`{"trusted": true, ...}`) and the section (`{"kernelpro": {...}}`).
    pub fn from_init_options(base: &Settings, value: &serde_json::Value) -> (Settings, Vec<String>) {
        Self::merge(base, init_section(value))
    }

    /// `base` updated by a configuration change, which may hold workspace or
    /// folder values: the [`USER_ONLY`] fields keep `base`'s values, except
    /// that `llm.enabled` may be turned off. Each kept field is reported.
    pub fn from_json(base: &Settings, value: &serde_json::Value) -> (Settings, Vec<String>) {
        let (mut settings, mut problems) = Self::merge(base, value);
        let turned_off = !settings.llm.enabled;
        let kept = LlmSettings { model: settings.llm.model.clone(), ..base.llm.clone() };
        let wanted = std::mem::replace(&mut settings.llm, kept);
        settings.llm.enabled &= !turned_off;
        let changed = [
            ("llm.enabled", wanted.enabled && !base.llm.enabled),
            ("llm.provider", wanted.provider != base.llm.provider),
            ("llm.endpoint", wanted.endpoint != base.llm.endpoint),
        ];
        for (name, _) in changed.iter().filter(|(_, c)| *c) {
            problems.push(format!(
                "{} is read only from user settings when the server starts (it decides where your key and code go); {}",
                base.words.setting(name),
                base.words.restart_hint()
            ));
        }
        (settings, problems)
    }

    /// `base` updated by the fields of a JSON value; a mistyped field is skipped
    /// (and reported), so one bad setting never disables the rest.
    fn merge(base: &Settings, value: &serde_json::Value) -> (Settings, Vec<String>) {
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
                if !NOT_SETTINGS.contains(&key.as_str()) {
                    problems.push(format!(
                        "unknown setting `{key}` ignored (a typo, or a setting of another KernelPro version?)"
                    ));
                }
                continue;
            }
            // Unknown members of a section are named too (`llm.modle`).
            if let (Some(old), Some(new)) = (target[key].as_object(), val.as_object()) {
                for member in new.keys().filter(|m| !old.contains_key(*m)) {
                    problems.push(format!(
                        "unknown setting `{key}.{member}` ignored (a typo, or a setting of another KernelPro version?)"
                    ));
                }
            }
            // A section (`llm`, `optimize`) is updated member by member, so
            // `{"llm": {"model": ...}}` keeps the other `llm` settings.
            let val = match (&target[key], val) {
                (serde_json::Value::Object(old), serde_json::Value::Object(new)) => {
                    let mut both = old.clone();
                    both.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
                    serde_json::Value::Object(both)
                }
                _ => val.clone(),
            };
            let mut candidate = target.clone();
            candidate.insert(key.clone(), val.clone());
            match serde_json::from_value::<Settings>(serde_json::Value::Object(candidate)) {
                Ok(_) => {
                    target.insert(key.clone(), val);
                }
                Err(e) => problems.push(format!("{} ignored: {e}", base.words.setting(key))),
            }
        }
        let mut settings: Settings = serde_json::from_value(merged).unwrap_or_else(|_| base.clone());
        settings.project_roots = base.project_roots.clone();
        settings.words = base.words;
        (settings, problems)
    }
}

impl Settings {
    /// The CLI's project roots: the folders holding each file the user named,
    /// and their ancestors (as for compile_commands.json), never the working
    /// directory. Running `kernelpro check k.cu` is consent to build k.cu with
    /// its project's tools; other commands (doctor) use no project.
    pub fn with_projects_of<P: AsRef<std::path::Path>>(mut self, files: &[P]) -> Settings {
        for file in files {
            let file = std::fs::canonicalize(file.as_ref()).unwrap_or_else(|_| file.as_ref().to_path_buf());
            for dir in file.ancestors().skip(1).filter(|d| d.is_absolute()) {
                if !self.project_roots.iter().any(|r| r == dir) {
                    self.project_roots.push(dir.to_path_buf());
                }
            }
        }
        self
    }
}

/// The settings object inside `initializationOptions`: the options themselves,
/// or their `"kernelpro"` member when the client nests them there.
pub fn init_section(options: &serde_json::Value) -> &serde_json::Value {
    options.get("kernelpro").filter(|v| v.is_object()).unwrap_or(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::Words;

    #[test]
    fn bad_field_keeps_the_others() {
        let (s, problems) = Settings::from_json(
            &Settings::default(),
            &serde_json::json!({"arch": "sm_80", "blockSize": "big", "trusted": true}),
        );
        assert_eq!(s.arch, "sm_80");
        assert!(s.trusted);
        assert_eq!(s.block_size, 256);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("blockSize"));
    }

    fn user_level() -> Settings {
        let (s, problems) = Settings::from_init_options(
            &Settings::default(),
            &serde_json::json!({"kernelpro": {"trusted": true, "llm": {"enabled": true, "provider": "anthropic", "endpoint": "https://api.anthropic.com", "model": "m1"}}}),
        );
        assert!(problems.is_empty(), "{problems:?}");
        s
    }

    #[test]
    fn both_init_option_shapes_are_read() {
        for options in [
            serde_json::json!({"trusted": true, "arch": "sm_80"}),
            serde_json::json!({"kernelpro": {"trusted": true, "arch": "sm_80"}}),
        ] {
            let (s, problems) = Settings::from_init_options(&Settings::default(), &options);
            assert_eq!((s.trusted, s.arch.as_str(), problems.len()), (true, "sm_80", 0), "{options}");
        }
        let s = user_level();
        assert_eq!(
            (s.llm.enabled, s.llm.provider.as_str(), s.llm.endpoint.as_deref()),
            (true, "anthropic", Some("https://api.anthropic.com"))
        );
    }

    /// A configuration change (which may carry a repository's values) against
    /// the user's settings: the LLM fields that route the key it gets, and whether it changed them.
    fn check_workspace(
        change: serde_json::Value,
        expected: (bool, &str, Option<&str>, Option<&str>),
        reported: &[&str],
    ) {
        let (s, problems) = Settings::from_json(&user_level(), &change);
        assert_eq!(
            (s.llm.enabled, s.llm.provider.as_str(), s.llm.endpoint.as_deref(), s.llm.model.as_deref()),
            expected,
            "{change}"
        );
        assert_eq!(problems.len(), reported.len(), "{problems:?}");
        for (p, name) in problems.iter().zip(reported) {
            assert!(p.contains(name) && p.contains("restart"), "{p}");
        }
    }

    #[test]
    fn a_workspace_cannot_route_the_key_elsewhere() {
        let user = (true, "anthropic", Some("https://api.anthropic.com"), Some("m1"));
        check_workspace(serde_json::json!({"llm": {"endpoint": "http://evil.example"}}), user, &["llm.endpoint"]);
        check_workspace(
            serde_json::json!({"llm": {"provider": "openai", "endpoint": "http://evil.example"}}),
            user,
            &["llm.provider", "llm.endpoint"],
        );
        // The same values again (an editor pushing the whole section) are no change.
        check_workspace(
            serde_json::json!({"llm": {"enabled": true, "provider": "anthropic", "endpoint": "https://api.anthropic.com", "model": "m1"}}),
            user,
            &[],
        );
        check_workspace(
            serde_json::json!({"llm": {"model": "m2"}, "arch": "sm_80"}),
            (true, "anthropic", Some("https://api.anthropic.com"), Some("m2")),
            &[],
        );
        check_workspace(
            serde_json::json!({"llm": {"enabled": false}}),
            (false, "anthropic", Some("https://api.anthropic.com"), Some("m1")),
            &[],
        );
        let (off, _) = Settings::from_json(&Settings::default(), &serde_json::json!({"trusted": true}));
        let (on, problems) = Settings::from_json(
            &off,
            &serde_json::json!({"llm": {"enabled": true, "endpoint": "http://evil.example"}}),
        );
        assert!(!on.llm.enabled && on.llm.endpoint.is_none() && problems.len() == 2, "{on:?} {problems:?}");
    }

    #[test]
    fn unknown_keys_are_named_and_the_key_is_not_one() {
        let (s, problems) = Settings::from_init_options(
            &Settings::default(),
            &serde_json::json!({"arhc": "sm_80", "llm": {"modle": "m"}, "llmKey": "sk-1", "arch": "sm_80"}),
        );
        assert_eq!(s.arch, "sm_80");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("unknown setting `arhc`") && problems[1].contains("unknown setting `llm.modle`"),
            "{problems:?}"
        );
    }

    #[test]
    fn problems_name_the_users_clients_settings() {
        for (words, name) in [
            (Words::COMMAND_LINE, "the `blockSize` setting"),
            (Words::ANY_CLIENT, "the `blockSize` setting (section \"kernelpro\")"),
        ] {
            let base = Settings { words, ..Settings::default() };
            let (s, problems) = Settings::from_json(&base, &serde_json::json!({"blockSize": "big"}));
            assert_eq!(s.words, words);
            assert!(problems.len() == 1 && problems[0].contains(name), "{problems:?}");
        }
    }

    #[test]
    fn project_roots_are_never_a_setting() {
        let base = Settings { project_roots: vec![PathBuf::from("/work/ws")], ..Settings::default() };
        let (s, _) = Settings::from_json(
            &base,
            &serde_json::json!({"projectRoots": ["/tmp/evil"], "project_roots": ["/tmp/evil"]}),
        );
        assert_eq!(s.project_roots, vec![PathBuf::from("/work/ws")]);
    }
}
