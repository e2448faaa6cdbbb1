//! The optional parts of this build (cargo features, all on by default; README, "Build features"),
//! and what a user who asks for a part that was left out is told: which part, and the
//! feature to rebuild with — never an unknown subcommand or tool without a word.

/// An optional part: the cargo feature and what it brings, as a user names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub what: &'static str,
}

pub const ACP: Feature = Feature {
    name: "acp",
    what: "ACP",
};
pub const MCP: Feature = Feature {
    name: "mcp",
    what: "MCP",
};
pub const WEB: Feature = Feature {
    name: "web",
    what: "web_fetch",
};
pub const KEYRING: Feature = Feature {
    name: "keyring",
    what: "OS keyring",
};
pub const LSP: Feature = Feature {
    name: "lsp",
    what: "language-server",
};

impl Feature {
    /// "this build has no ACP support: rebuild with --features acp".
    pub fn missing(self) -> String {
        format!(
            "this build has no {} support: rebuild with --features {}",
            self.what, self.name
        )
    }
}

/// The built-in tool `name` when this build left it out: the feature that brings it.
pub fn tool_left_out(name: &str) -> Option<Feature> {
    match name {
        "web_fetch" if !cfg!(feature = "web") => Some(WEB),
        "lsp" if !cfg!(feature = "lsp") => Some(LSP),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_part_and_the_feature() {
        assert_eq!(
            ACP.missing(),
            "this build has no ACP support: rebuild with --features acp"
        );
    }

    #[test]
    fn a_tool_left_out_of_the_build_is_named_with_its_feature() {
        let tools = crate::tools::Tools::check_names(&["read", "web_fetch"], &[]);
        let rule = crate::tools::rules::RuleSet::parse(
            &["web_fetch".to_string()],
            &[],
            &[],
            std::path::Path::new("/"),
        );
        if cfg!(feature = "web") {
            assert_eq!(tool_left_out("web_fetch"), None);
            assert!(tools.is_ok());
            assert!(rule.is_ok());
        } else {
            assert_eq!(tool_left_out("web_fetch"), Some(WEB));
            let why = tools.unwrap_err();
            assert!(why.contains("rebuild with --features web"), "{why}");
            let why = rule.err().unwrap().message;
            assert!(why.contains("rebuild with --features web"), "{why}");
        }
        let lsp_left_out = (!cfg!(feature = "lsp")).then_some(LSP);
        assert_eq!(tool_left_out("lsp"), lsp_left_out);
        assert_eq!(
            KEYRING.missing(),
            "this build has no OS keyring support: rebuild with --features keyring"
        );
        assert_eq!(tool_left_out("no_such_tool"), None);
    }
}
