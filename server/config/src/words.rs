//! The words a message uses for a setting or a command, chosen by the client
//! the user is in. The crates below the adapters say which setting or command
//! they mean (`words.setting("nvcc")`, `words.trust_hint()`); the adapters
//! (`lsp` from the LSP `clientInfo`, the CLI) choose the words, so no crate
//! below them names an editor.

/// How the user's client names settings and commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// How a setting is named; `{key}` stands for its dotted key (`llm.enabled`).
    pub setting: &'static str,
    /// What to do to let KernelPro compile and run code here.
    pub trust: &'static str,
    /// How to apply a code action offered on the kernel.
    pub code_action: &'static str,
    /// How to install the CUDA compiler where KernelPro manages it.
    pub install_cuda: &'static str,
    /// What to do after changing a setting that is read only at start-up.
    pub restart: &'static str,
    /// Where the include paths and extra flags of the settings were given,
    /// in the warning about one that was not passed.
    pub flags_given: &'static str,
    /// Where the uncapped SASS listing of a line is, said under a capped hover.
    pub full_listing: &'static str,
    /// The client stops at a prompt for a message wider than its command line
    /// (Neovim's hit-enter): a result's notes stay in the kernel's hover.
    pub notes_in_hover: bool,
}

impl Words {
    /// An LSP client we do not know: words that hold for any of them.
    pub const ANY_CLIENT: Words = Words {
        setting: "the `{key}` setting (section \"kernelpro\")",
        trust: "set `trusted = true` in the server's settings or initializationOptions",
        code_action: "the code action on the kernel",
        install_cuda: "run `kernelpro install-cuda` and set the nvcc setting to the path it prints",
        restart: "restart the server to apply it",
        flags_given: "from the kernelpro.extraFlags/includePaths settings",
        full_listing: "the **Show SASS for Line** command or `kernelpro check FILE --sass LINE`",
        notes_in_hover: false,
    };

    /// The `kernelpro` command line.
    pub const COMMAND_LINE: Words = Words {
        setting: "the `{key}` setting",
        trust: "the command line always trusts the files it is given",
        flags_given: "given with --flag or -I",
        full_listing: "`kernelpro check FILE --sass LINE`",
        ..Words::ANY_CLIENT
    };

    /// How the user names setting `key` (dotted, as in `llm.enabled`).
    pub fn setting(&self, key: &str) -> String {
        self.setting.replace("{key}", key)
    }

    /// A tool's words about a setting (`the runner setting`, `the ncu setting`:
    /// the crates below know no client) in this client's names, so every
    /// failure text names settings one way (`the \`kernelpro.runner\` setting`).
    pub fn name_settings(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in ["runner", "ncu", "nvcc", "extraFlags", "includePaths"] {
            out = out.replace(&format!("the {key} setting"), &self.setting(key));
        }
        out
    }

    pub fn trust_hint(&self) -> &'static str {
        self.trust
    }

    pub fn code_action_hint(&self) -> &'static str {
        self.code_action
    }

    pub fn install_cuda_hint(&self) -> &'static str {
        self.install_cuda
    }

    pub fn restart_hint(&self) -> &'static str {
        self.restart
    }
}

impl Default for Words {
    fn default() -> Self {
        Words::ANY_CLIENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_named_in_the_clients_words() {
        assert_eq!(Words::COMMAND_LINE.setting("llm.enabled"), "the `llm.enabled` setting");
        assert_eq!(
            Words::ANY_CLIENT.name_settings("check the runner setting"),
            "check the `runner` setting (section \"kernelpro\")"
        );
        assert_eq!(Words::COMMAND_LINE.restart_hint(), Words::ANY_CLIENT.restart_hint());
    }
}
