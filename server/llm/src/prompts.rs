//! Prompt templates: the files in `prompts/`, embedded at build time and
//! replaceable one by one from a directory.

use std::path::Path;

/// The templates and the file names they are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    pub system: String,
    pub optimize: String,
    pub fix: String,
    /// Appended as `{{tools}}` when the CUTLASS tools are offered.
    pub tools: String,
}

const FILES: [&str; 4] = ["system.md", "optimize.md", "fix_compile_error.md", "tools.md"];

impl Default for Templates {
    fn default() -> Self {
        Templates {
            system: include_str!("../../../prompts/system.md").to_owned(),
            optimize: include_str!("../../../prompts/optimize.md").to_owned(),
            fix: include_str!("../../../prompts/fix_compile_error.md").to_owned(),
            tools: include_str!("../../../prompts/tools.md").to_owned(),
        }
    }
}

impl Templates {
    /// The embedded templates, with each file present in `dir` used instead.
    pub fn load(dir: Option<&Path>) -> std::io::Result<Templates> {
        let mut templates = Templates::default();
        let Some(dir) = dir else { return Ok(templates) };
        let slots = [&mut templates.system, &mut templates.optimize, &mut templates.fix, &mut templates.tools];
        for (file, slot) in FILES.iter().zip(slots) {
            match std::fs::read_to_string(dir.join(file)) {
                Ok(text) => *slot = text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(templates)
    }
}

/// `template` with each `{{name}}` replaced by its value; unknown
/// placeholders are left as written. Values are not re-scanned, so a kernel
/// that contains `{{…}}` is inserted verbatim.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let value = after.find("}}").and_then(|close| {
            let name = after[..close].trim();
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_known_placeholders_once() {
        let out = render("a {{x}} b {{ y }} {{z}}", &[("x", "{{y}}"), ("y", "2")]);
        assert_eq!(out, "a {{y}} b 2 {{z}}");
    }

    #[test]
    fn directory_overrides_single_files() {
        let dir = std::env::temp_dir().join(format!("kernelpro-llm-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("optimize.md"), "custom {{kernel}}").unwrap();
        let loaded = Templates::load(Some(&dir)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(loaded.optimize, "custom {{kernel}}");
        assert_eq!(loaded.system, Templates::default().system);
    }

    #[test]
    fn embedded_templates_use_every_placeholder() {
        let t = Templates::default();
        for name in ["kernel", "kernel_name", "launch_spec", "findings", "model", "hardware", "memory", "tools"] {
            assert!(t.optimize.contains(&format!("{{{{{name}}}}}")), "optimize.md lacks {name}");
        }
        assert!(t.fix.contains("{{failure}}") && t.fix.contains("{{model}}"));
    }
}
