//! Which editor the user is in (from the LSP `clientInfo`), and that editor's
//! words for settings and commands ([`Words`]), so that messages name the
//! settings and commands of that editor, never another's: a Neovim user is
//! not told about VS Code's Settings UI. The crates below `lsp` name no
//! editor: they say which setting or command they mean, in these words.

use kernelpro_config::words::Words;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Editor {
    VsCode,
    Neovim,
    /// An LSP client we do not know: words that hold for any of them.
    #[default]
    Other,
}

/// Where the uncapped SASS listing of a line is, said under a capped hover
/// (the same words in every editor: the VS Code extension rewrites its own).
const FULL_LISTING: &str =
    "the **Show SASS for Line** command (`:KernelProSass` in Neovim) or `kernelpro check FILE --sass LINE`";

const VS_CODE: Words = Words {
    setting: "the `kernelpro.{key}` setting",
    trust: "trust the workspace (Manage Workspace Trust)",
    code_action: "the Quick Fix (Ctrl+.) on the kernel",
    install_cuda: "run KernelPro: Install CUDA Compiler",
    restart: "run KernelPro: Restart Server to apply it",
    full_listing: FULL_LISTING,
    ..Words::ANY_CLIENT
};

const NEOVIM: Words = Words {
    setting: "`settings.{key}` in require('kernelpro').setup()",
    trust: "run :KernelProTrust (or `trusted = true` in setup() for projects you trust)",
    code_action: "vim.lsp.buf.code_action() on the kernel",
    install_cuda: "run :KernelProInstallCuda",
    restart: "restart the server (:LspRestart kernelpro, or restart Neovim) to apply it",
    full_listing: FULL_LISTING,
    notes_in_hover: true,
    ..Words::ANY_CLIENT
};

const OTHER: Words = Words { full_listing: FULL_LISTING, ..Words::ANY_CLIENT };

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

    /// This editor's words, which the settings carry to the crates below.
    pub fn words(self) -> Words {
        match self {
            Editor::VsCode => VS_CODE,
            Editor::Neovim => NEOVIM,
            Editor::Other => OTHER,
        }
    }

    /// The editor whose words these are (the settings carry only the words).
    pub fn of(words: &Words) -> Editor {
        [Editor::VsCode, Editor::Neovim].into_iter().find(|e| e.words() == *words).unwrap_or(Editor::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_config::settings::Settings;

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
            assert_eq!(Editor::of(&editor.words()), editor);
        }
        let (neovim, vscode) = (Editor::Neovim.words(), Editor::VsCode.words());
        assert!(!neovim.setting("nvcc").contains("kernelpro.nvcc"));
        assert!(!neovim.trust_hint().contains("Workspace Trust"));
        assert!(vscode.setting("nvcc").contains("kernelpro.nvcc"));
        // Issue 32: a GPU failure's "the runner setting" is named as the editor names it.
        assert_eq!(
            vscode.name_settings("check the runner setting and the ncu setting"),
            "check the `kernelpro.runner` setting and the `kernelpro.ncu` setting"
        );
        assert!(neovim.name_settings("set the runner setting").contains("settings.runner"));
        // Every editor's rejected flag names the settings it came from, and its
        // capped hover where the full listing is.
        for editor in [Editor::VsCode, Editor::Neovim, Editor::Other] {
            assert_eq!(editor.words().flags_given, "from the kernelpro.extraFlags/includePaths settings");
            assert!(editor.words().full_listing.contains("(`:KernelProSass` in Neovim)"));
        }
    }

    #[test]
    fn problems_name_the_users_editor_settings() {
        for (editor, name) in [
            (Editor::VsCode, "`kernelpro.blockSize`"),
            (Editor::Neovim, "`settings.blockSize` in require('kernelpro').setup()"),
        ] {
            let base = Settings { words: editor.words(), ..Settings::default() };
            let (s, problems) = Settings::from_json(&base, &serde_json::json!({"blockSize": "big"}));
            assert_eq!(Editor::of(&s.words), editor);
            assert!(problems.len() == 1 && problems[0].contains(name), "{problems:?}");
        }
    }
}
