//! Whether a tool call may run: the permission mode (ask / auto / read-only) and the exact
//! calls the user allowed for the rest of the session. Read-only tools never ask.

use super::Tool;
use crate::agent::message::ToolCall;
use serde::Deserialize;
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Mutating tools need the user's approval.
    #[default]
    Ask,
    /// Everything runs.
    Auto,
    /// Mutating tools are always denied.
    ReadOnly,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::Auto => "auto",
            PermissionMode::ReadOnly => "read-only",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(String),
    /// Needs approval; the text says why (shown to the user).
    Ask(String),
}

#[derive(Debug, Default)]
pub struct Permissions {
    pub mode: PermissionMode,
    /// Calls allowed for the session ("allow for session"): tool name + exact arguments.
    session_allowed: HashSet<String>,
}

impl Permissions {
    pub fn new(mode: PermissionMode) -> Self {
        Permissions {
            mode,
            session_allowed: HashSet::new(),
        }
    }

    pub fn judge(&self, tool: &dyn Tool, call: &ToolCall) -> Verdict {
        if tool.read_only() {
            return Verdict::Allow;
        }
        match self.mode {
            PermissionMode::Auto => Verdict::Allow,
            PermissionMode::ReadOnly => Verdict::Deny(format!(
                "Permission denied: `{}` can change files or run programs, and the agent is in \
                 read-only mode (--permission-mode read-only).",
                call.name
            )),
            PermissionMode::Ask if self.session_allowed.contains(&rule_key(call)) => Verdict::Allow,
            PermissionMode::Ask => {
                Verdict::Ask(format!("`{}` can change files or run programs", call.name))
            }
        }
    }

    /// Allow this exact call (same tool, same arguments) for the rest of the session.
    pub fn allow_for_session(&mut self, call: &ToolCall) {
        self.session_allowed.insert(rule_key(call));
    }
}

fn rule_key(call: &ToolCall) -> String {
    format!("{}({})", call.name, call.arguments)
}

/// What the model is told when a call needed approval and nobody can answer (`-p`, json).
pub fn cannot_ask_message(tool: &str) -> String {
    format!(
        "Permission denied: `{tool}` needs the user's approval, and this non-interactive run \
         cannot ask for it. The user can allow it by re-running with --permission-mode auto."
    )
}
