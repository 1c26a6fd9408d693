//! The one description of every setting, beside [`Settings`] (whose
//! `Default` gives the defaults). The editors' views are generated from it
//! and kept so by this module's tests (`UPDATE_EXPECT=1 cargo test -p
//! kernelpro-config settings_doc` rewrites them): VS Code's
//! `contributes.configuration` in `editors/vscode/package.json` and the
//! table in `editors/vscode/README.md`, the list in `editors/nvim/README.md`;
//! the README's own table is checked to name every setting.

use crate::settings::Settings;
use serde_json::Value;

pub struct SettingDoc {
    /// Dotted, as the server reads it: `optimize.budget`.
    pub key: &'static str,
    /// Markdown, one or two sentences.
    pub description: &'static str,
    /// More JSON schema for the settings UI (`enum`, `minimum`, `items`,
    /// `scope`), as a JSON object.
    pub schema: &'static str,
    /// A setting of the VS Code client only (never sent to the server), with its default as JSON.
    pub client_default: Option<&'static str>,
}

const fn server(key: &'static str, description: &'static str, schema: &'static str) -> SettingDoc {
    SettingDoc { key, description, schema, client_default: None }
}

const fn client(
    key: &'static str,
    default: &'static str,
    description: &'static str,
    schema: &'static str,
) -> SettingDoc {
    SettingDoc { key, description, schema, client_default: Some(default) }
}

/// In the order the settings UI shows them. `trusted` is not here: it comes
/// from the editor's workspace trust (or Neovim's `trusted` option), never from a settings file.
pub const SETTINGS: &[SettingDoc] = &[
    client(
        "serverPath",
        "null",
        "Path of the `kernelpro` binary. Empty: the binary bundled for this platform, then `kernelpro` on `PATH`. Changing it restarts the server.",
        r#"{"scope": "machine-overridable"}"#,
    ),
    server(
        "nvcc",
        "Path of `nvcc`. Empty: `KERNELPRO_NVCC`, `CUDA_HOME/bin`, `PATH`, then the project's `.venv`.",
        r#"{"scope": "machine-overridable"}"#,
    ),
    server(
        "ncu",
        "Path of Nsight Compute's `ncu`, for profiling. Empty: `KERNELPRO_NCU`, `CUDA_HOME/bin`, `PATH`.",
        r#"{"scope": "machine-overridable"}"#,
    ),
    server("arch", "GPU architecture to compile for (`-arch`), e.g. `sm_80`, `sm_90`.", "{}"),
    server("includePaths", "Extra include directories (`-I`).", r#"{"items": {"type": "string"}}"#),
    server("extraFlags", "Extra nvcc flags.", r#"{"items": {"type": "string"}}"#),
    server("compileTimeoutSecs", "Give up on a compile after this many seconds.", r#"{"minimum": 1}"#),
    server(
        "blockSize",
        "Threads per block assumed for occupancy when the source has no launch.",
        r#"{"minimum": 1, "maximum": 1024}"#,
    ),
    server(
        "profileOnSave",
        "Profile the file's kernels on every save (needs a GPU and a trusted workspace): in-process where CUPTI is found, else with ncu; a program's save measures only the kernels it changed, the others keep their last findings.",
        "{}",
    ),
    server("clockControl", "ncu `--clock-control`.", r#"{"enum": ["none", "base"]}"#),
    server(
        "runner",
        "Command prefix for running the program when profiling, e.g. `[\"srun\", \"-G1\"]`.",
        r#"{"items": {"type": "string"}}"#,
    ),
    server("runTimeoutSecs", "Give up on a profiled run after this many seconds.", r#"{"minimum": 1}"#),
    server(
        "profileTimeoutSecs",
        "Give up on profiling a file (each ncu stage) after this many seconds.",
        r#"{"minimum": 1}"#,
    ),
    server(
        "profileBackend",
        "Which profiler reads a kernel's counters: `auto` (in-process through CUPTI, about a second per kernel, where its library builds next to nvcc; else Nsight Compute), `cupti` or `ncu`. A full profile (`--full`) always uses Nsight Compute.",
        r#"{"enum": ["auto", "cupti", "ncu"]}"#,
    ),
    server(
        "llm.enabled",
        "Let the optimizer ask an LLM for rewrites. The key comes from **KernelPro: Set LLM API Key** (secret storage) or `KERNELPRO_LLM_KEY`, never from settings.",
        r#"{"scope": "machine"}"#,
    ),
    server("llm.provider", "LLM API flavour.", r#"{"enum": ["openai", "anthropic"], "scope": "machine"}"#),
    server("llm.endpoint", "LLM endpoint URL. Empty: the provider's default.", r#"{"scope": "machine"}"#),
    server("llm.model", "LLM model name. Empty: the server's default.", "{}"),
    server("optimize.budget", "Candidate kernels the optimizer may evaluate per run.", r#"{"minimum": 1}"#),
    server("optimize.timeSecs", "Wall-clock limit of one optimize run.", r#"{"minimum": 1}"#),
    server(
        "optimize.evaluator",
        "How candidates are timed: `gpu`, or `stub:SPEEDUP` (a fake evaluator for tests).",
        "{}",
    ),
    server(
        "optimize.energy",
        "Measure energy (about 1 s per candidate), so candidates of equal speed are ranked by it.",
        "{}",
    ),
    server(
        "optimize.devices",
        "CUDA devices the optimizer runs candidates on: the candidates of an iteration run in parallel, one per GPU (never two timing runs on one GPU). The original's baseline runs on the first.",
        r#"{"items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": true}"#,
    ),
    server(
        "optimize.profileOriginal",
        "Profile the original (two ncu stages, a few seconds) before the search, so the recipes answering its measured findings are tried first.",
        "{}",
    ),
    client(
        "hover",
        "\"auto\"",
        "When to show KernelPro hovers. `auto`: everywhere, except that beside clangd or the C/C++ extension only on lines with a KernelPro finding and on kernel names.",
        r#"{"enum": ["auto", "always", "off"]}"#,
    ),
    client(
        "trace.server",
        "\"off\"",
        "Log the LSP traffic to the **KernelPro Trace** output channel.",
        r#"{"enum": ["off", "messages", "verbose"], "scope": "window"}"#,
    ),
];

/// Every setting the server reads, dotted (from the settings object itself).
pub fn server_keys() -> Vec<String> {
    fn leaves(prefix: &str, v: &Value, out: &mut Vec<String>) {
        match v.as_object() {
            Some(o) => o.iter().for_each(|(k, v)| leaves(&format!("{prefix}{k}."), v, out)),
            None => out.push(prefix.trim_end_matches('.').to_string()),
        }
    }
    let mut out = Vec::new();
    leaves("", &serde_json::to_value(Settings::default()).expect("settings serialize"), &mut out);
    out
}

/// The default of `doc`: the client's own, or the server's `Settings::default()`.
pub fn default_of(doc: &SettingDoc) -> Value {
    if let Some(d) = doc.client_default {
        return serde_json::from_str(d).expect("a client default is JSON");
    }
    let all = serde_json::to_value(Settings::default()).expect("settings serialize");
    doc.key.split('.').fold(all, |v, k| v.get(k).cloned().unwrap_or_else(|| panic!("no setting {}", doc.key)))
}

/// `allowed values` of an `enum` setting, as `a`, `b`.
fn one_of(doc: &SettingDoc) -> Option<String> {
    let schema: Value = serde_json::from_str(doc.schema).expect("schema is JSON");
    let values =
        schema.get("enum")?.as_array()?.iter().filter_map(|v| v.as_str()).map(|v| format!("`{v}`")).collect::<Vec<_>>();
    Some(values.join(", "))
}

fn json_type(default: &Value) -> Value {
    match default {
        // A plain string, so that the settings UI shows a text box (a `null` in
        // the type makes it "Edit in settings.json"); empty means unset.
        Value::Null => "string".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// `value` as `JSON.stringify(value, null, 2)` writes it, its lines after the first indented by `indent`.
fn pretty(value: &Value, indent: usize) -> String {
    let text = serde_json::to_string_pretty(value).expect("JSON");
    text.replace('\n', &format!("\n{}", " ".repeat(indent)))
}

/// An object with its fields in the given order, as `JSON.stringify(_, null, 2)` at `indent`.
fn object(fields: &[(String, Value)], indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    let body: Vec<String> =
        fields.iter().map(|(k, v)| format!("{pad}{}: {}", Value::from(k.as_str()), pretty(v, indent + 2))).collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), " ".repeat(indent))
}

/// The settings as a JSON schema's `properties` (named `kernelpro.KEY`), as
/// written at `indent`: VS Code's `contributes.configuration.properties`.
pub fn schema_properties(indent: usize) -> String {
    let properties: Vec<(String, Value)> = SETTINGS
        .iter()
        .map(|doc| {
            let default = default_of(doc);
            let mut fields = vec![
                ("type".to_string(), json_type(&default)),
                ("default".to_string(), default),
                ("markdownDescription".to_string(), Value::from(doc.description)),
            ];
            let schema: serde_json::Map<String, Value> = serde_json::from_str(doc.schema).expect("schema is JSON");
            fields.extend(schema);
            (format!("kernelpro.{}", doc.key), Value::String(object(&fields, indent + 2)))
        })
        .collect();
    // The values are already text: write them unquoted.
    let pad = " ".repeat(indent + 2);
    let body: Vec<String> = properties
        .iter()
        .map(|(k, v)| format!("{pad}{}: {}", Value::from(k.as_str()), v.as_str().expect("text")))
        .collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), " ".repeat(indent))
}

/// The settings table of `editors/vscode/README.md`.
pub fn settings_table() -> String {
    let mut s = String::from("| setting | default | meaning |\n|---|---|---|\n");
    for doc in SETTINGS {
        let mut meaning = doc.description.to_string();
        if let Some(values) = one_of(doc) {
            meaning.push_str(&format!(" One of {values}."));
        }
        s.push_str(&format!("| `kernelpro.{}` | `{}` | {} |\n", doc.key, default_of(doc), meaning.replace('|', "\\|")));
    }
    s
}

/// The server settings as Neovim's `settings = { … }` takes them, for `editors/nvim/README.md`:
/// `` `nvcc`, …, `llm = { enabled, … }` ``.
pub fn nested_settings_list() -> String {
    let mut items: Vec<String> = Vec::new();
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for doc in SETTINGS.iter().filter(|d| d.client_default.is_none()) {
        match doc.key.split_once('.') {
            None => items.push(format!("`{}`", doc.key)),
            Some((section, member)) => match sections.iter_mut().find(|(s, _)| *s == section) {
                Some((_, members)) => members.push(member),
                None => sections.push((section, vec![member])),
            },
        }
    }
    items.extend(sections.iter().map(|(s, m)| format!("`{s} = {{ {} }}`", m.join(", "))));
    items.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn repo(path: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
    }

    /// `file` with the text between `start` and `end` (both kept) replaced by
    /// `generated`; rewritten under UPDATE_EXPECT=1, else compared.
    fn check_generated(path: &str, start: &str, end: &str, generated: &str) {
        let file = repo(path);
        let text = std::fs::read_to_string(&file).unwrap();
        let from = text.find(start).unwrap_or_else(|| panic!("{path}: no `{start}`")) + start.len();
        let to = from + text[from..].find(end).unwrap_or_else(|| panic!("{path}: no `{end}` after `{start}`"));
        if text[from..to] == *generated {
            return;
        }
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::write(&file, format!("{}{generated}{}", &text[..from], &text[to..])).unwrap();
            return;
        }
        panic!(
            "{path} is not what server/config/src/settings_doc.rs generates; run `UPDATE_EXPECT=1 cargo test -p kernelpro-config settings_doc`.\n--- generated:\n{generated}\n--- found:\n{}",
            &text[from..to]
        );
    }

    #[test]
    fn every_server_setting_is_described_once() {
        let mut described: Vec<String> =
            SETTINGS.iter().filter(|d| d.client_default.is_none()).map(|d| d.key.to_string()).collect();
        let mut keys: Vec<String> = server_keys().into_iter().filter(|k| k != "trusted").collect();
        described.sort();
        keys.sort();
        assert_eq!(described, keys);
    }

    #[test]
    fn vscode_package_json_is_generated() {
        // `properties` sits at 6 spaces in package.json; the block ends at the
        // configuration's closing brace, four spaces in.
        check_generated(
            "editors/vscode/package.json",
            "\"configuration\": {\n      \"title\": \"KernelPro\",\n      \"properties\": ",
            "\n    }\n  },",
            &schema_properties(6),
        );
        let pkg: Value = serde_json::from_str(&std::fs::read_to_string(repo("editors/vscode/package.json")).unwrap())
            .expect("package.json stays JSON");
        assert_eq!(
            pkg["contributes"]["configuration"]["properties"]["kernelpro.nvcc"]["type"],
            serde_json::json!("string")
        );
    }

    #[test]
    fn vscode_readme_table_is_generated() {
        check_generated(
            "editors/vscode/README.md",
            "<!-- settings: generated by server/config/src/settings_doc.rs -->\n",
            "<!-- end of settings -->",
            &settings_table(),
        );
    }

    #[test]
    fn nvim_readme_lists_every_server_setting() {
        check_generated(
            "editors/nvim/README.md",
            "answered for `workspace/configuration` section `kernelpro`: ",
            " |\n",
            &nested_settings_list(),
        );
    }

    #[test]
    fn the_readme_table_names_every_setting() {
        let text = std::fs::read_to_string(repo("README.md")).unwrap();
        let table =
            text.split("\n## Settings\n").nth(1).expect("README has ## Settings").split("\n## ").next().unwrap();
        let mut named: Vec<String> = table
            .lines()
            .filter(|l| l.starts_with("| `"))
            .flat_map(|l| {
                l.split('|')
                    .nth(1)
                    .unwrap_or("")
                    .split(',')
                    .map(|k| k.trim().trim_matches('`').to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut keys = server_keys();
        named.sort();
        keys.sort();
        assert_eq!(named, keys, "README.md's ## Settings table");
    }
}
