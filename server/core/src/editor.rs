//! Which editor the user is in (from the LSP `clientInfo`, or the CLI), so
//! that messages name the settings and commands of that editor, never
//! another's: a Neovim user is not told about VS Code's Settings UI.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Editor {
    VsCode,
    Neovim,
    /// The `kernelpro` command line.
    Cli,
    /// An LSP client we do not know: words that hold for any of them.
    #[default]
    Other,
}

impl Editor {
    /// From `clientInfo.name`: VS Code's client sends the application's name
    /// ("Visual Studio Code", "code-server", "VSCodium", ...), Neovim "Neovim".
    pub fn from_client_name(name: &str) -> Editor {
        let n = name.to_ascii_lowercase();
        if n.contains("neovim") || n == "nvim" {
            Editor::Neovim
        } else if n.contains("visual studio code")
            || n.contains("code-server")
            || n.contains("vscode")
            || n.contains("vscodium")
        {
            Editor::VsCode
        } else {
            Editor::Other
        }
    }

    /// How the user names setting `key` (dotted, as in `llm.enabled`).
    pub fn setting(self, key: &str) -> String {
        match self {
            Editor::VsCode => format!("the `kernelpro.{key}` setting"),
            Editor::Neovim => format!("`settings.{key}` in require('kernelpro').setup()"),
            Editor::Cli => format!("the `{key}` setting"),
            Editor::Other => format!("the `{key}` setting (section \"kernelpro\")"),
        }
    }

    /// A tool's words about a setting (`the runner setting`, `the ncu setting`:
    /// the crates below core know no editor) in this editor's names, so every
    /// failure text names settings one way (`the \`kernelpro.runner\` setting`).
    pub fn name_settings(self, text: &str) -> String {
        let mut out = text.to_string();
        for key in ["runner", "ncu", "nvcc", "extraFlags", "includePaths"] {
            out = out.replace(&format!("the {key} setting"), &self.setting(key));
        }
        out
    }

    /// What to do to let KernelPro compile and run code here.
    pub fn trust_hint(self) -> &'static str {
        match self {
            Editor::VsCode => "trust the workspace (Manage Workspace Trust)",
            Editor::Neovim => "run :KernelProTrust (or `trusted = true` in setup() for projects you trust)",
            Editor::Cli => "the command line always trusts the files it is given",
            Editor::Other => "set `trusted = true` in the server's settings or initializationOptions",
        }
    }

    /// How to apply a code action offered on the kernel.
    pub fn code_action_hint(self) -> &'static str {
        match self {
            Editor::VsCode => "the Quick Fix (Ctrl+.) on the kernel",
            Editor::Neovim => "vim.lsp.buf.code_action() on the kernel",
            _ => "the code action on the kernel",
        }
    }

    /// How to install the CUDA compiler where KernelPro manages it.
    pub fn install_cuda_hint(self) -> &'static str {
        match self {
            Editor::VsCode => "run KernelPro: Install CUDA Compiler",
            Editor::Neovim => "run :KernelProInstallCuda",
            _ => "run `kernelpro install-cuda` and set the nvcc setting to the path it prints",
        }
    }

    /// What to do after changing a setting that is read only at start-up.
    pub fn restart_hint(self) -> &'static str {
        match self {
            Editor::VsCode => "run KernelPro: Restart Server to apply it",
            Editor::Neovim => "restart the server (:LspRestart kernelpro, or restart Neovim) to apply it",
            _ => "restart the server to apply it",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_and_their_words() {
        let cases = [
            ("Visual Studio Code", Editor::VsCode),
            ("code-server", Editor::VsCode),
            ("Neovim", Editor::Neovim),
            ("helix", Editor::Other),
        ];
        for (name, editor) in cases {
            assert_eq!(Editor::from_client_name(name), editor, "{name}");
        }
        assert!(!Editor::Neovim.setting("nvcc").contains("kernelpro.nvcc"));
        assert!(!Editor::Neovim.trust_hint().contains("Workspace Trust"));
        assert!(Editor::VsCode.setting("nvcc").contains("kernelpro.nvcc"));
        // Issue 32: a GPU failure's "the runner setting" is named as the editor names it.
        assert_eq!(
            Editor::VsCode.name_settings("check the runner setting and the ncu setting"),
            "check the `kernelpro.runner` setting and the `kernelpro.ncu` setting"
        );
        assert!(Editor::Neovim.name_settings("set the runner setting").contains("settings.runner"));
    }
}
