//! Where hooks come from: `[[hooks.EVENT]]` tables of `config.toml` (the user's), and the
//! `hooks` object of a project's `.agent/settings.json` or `.claude/settings.json` (Claude
//! Code's format), which run only in a project the user trusted (`trust`).

use super::{HookEvent, HookSource, HookSpec};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a hook may run when its entry does not say (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[[hooks.EVENT]]` entry of `config.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// A regular expression the tool name must match in full (tool events only; `*` or
    /// absent: every tool).
    pub matcher: Option<String>,
    /// Run with `sh -c` in the working directory.
    pub command: String,
    pub timeout_secs: Option<u64>,
    /// `false`: run outside the command sandbox (default: inside it).
    pub sandbox: Option<bool>,
}

/// `[hooks]` of `config.toml`: one list per event; an unknown event name is an error.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksTable {
    #[serde(rename = "PreToolUse", default)]
    pub pre_tool_use: Vec<HookEntry>,
    #[serde(rename = "PostToolUse", default)]
    pub post_tool_use: Vec<HookEntry>,
    #[serde(rename = "UserPromptSubmit", default)]
    pub user_prompt_submit: Vec<HookEntry>,
    #[serde(rename = "Stop", default)]
    pub stop: Vec<HookEntry>,
    #[serde(rename = "SessionStart", default)]
    pub session_start: Vec<HookEntry>,
    #[serde(rename = "SessionEnd", default)]
    pub session_end: Vec<HookEntry>,
    #[serde(rename = "PreCompact", default)]
    pub pre_compact: Vec<HookEntry>,
    #[serde(rename = "Notification", default)]
    pub notification: Vec<HookEntry>,
}

impl HooksTable {
    /// The hooks, checked (`Err((key, message))` names the entry, e.g. `hooks.Stop[0]`).
    pub fn specs(&self, config: &Path) -> Result<Vec<HookSpec>, (String, String)> {
        let lists = [
            (HookEvent::PreToolUse, &self.pre_tool_use),
            (HookEvent::PostToolUse, &self.post_tool_use),
            (HookEvent::UserPromptSubmit, &self.user_prompt_submit),
            (HookEvent::Stop, &self.stop),
            (HookEvent::SessionStart, &self.session_start),
            (HookEvent::SessionEnd, &self.session_end),
            (HookEvent::PreCompact, &self.pre_compact),
            (HookEvent::Notification, &self.notification),
        ];
        let mut specs = Vec::new();
        for (event, entries) in lists {
            for (index, entry) in entries.iter().enumerate() {
                let key = |field: &str| format!("hooks.{}[{index}].{field}", event.as_str());
                if entry.command.trim().is_empty() {
                    return Err((key("command"), "must not be empty".to_string()));
                }
                if entry.timeout_secs == Some(0) {
                    return Err((key("timeout_secs"), "must be at least 1".to_string()));
                }
                let spec = HookSpec::new(
                    event,
                    entry.matcher.clone(),
                    entry.command.clone(),
                    entry
                        .timeout_secs
                        .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                    HookSource::Config(config.to_path_buf()),
                )
                .map_err(|message| (key("matcher"), message))?;
                specs.push(if entry.sandbox == Some(false) {
                    spec.unsandboxed()
                } else {
                    spec
                });
            }
        }
        Ok(specs)
    }
}

/// The project's hook files, in the order they are read.
pub fn project_files(root: &Path) -> Vec<PathBuf> {
    [
        ".agent/settings.json",
        ".agent/settings.local.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ]
    .iter()
    .map(|name| root.join(name))
    .filter(|path| path.is_file())
    .collect()
}

/// The hooks of a project's settings files, and what could not be read. Claude Code's
/// format: `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
/// "command": "…", "timeout": 30}]}]}}` (`timeout` in seconds), plus this agent's
/// `"sandbox": false` on a hook that is to run outside the command sandbox.
pub fn project_hooks(files: &[PathBuf]) -> (Vec<HookSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for path in files {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!("cannot read {}: {e}", path.display()));
                continue;
            }
        };
        let value: Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(e) => {
                problems.push(format!(
                    "{}:{}: not valid JSON ({e}); its hooks are not used",
                    path.display(),
                    e.line()
                ));
                continue;
            }
        };
        let Some(hooks) = value.get("hooks").and_then(Value::as_object) else {
            continue;
        };
        for (name, groups) in hooks {
            let Some(event) = HookEvent::from_name(name) else {
                problems.push(format!(
                    "{}: hooks.{name}: not an event this agent has (known: {})",
                    path.display(),
                    HookEvent::ALL.map(HookEvent::as_str).join(", ")
                ));
                continue;
            };
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group
                    .get("matcher")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let kind = hook
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("command");
                    let Some(command) = hook.get("command").and_then(Value::as_str) else {
                        problems.push(format!(
                            "{}: a hooks.{name} entry has no `command`",
                            path.display()
                        ));
                        continue;
                    };
                    if kind != "command" {
                        problems.push(format!(
                            "{}: hooks.{name}: hooks of type `{kind}` are not supported",
                            path.display()
                        ));
                        continue;
                    }
                    let timeout = hook
                        .get("timeout")
                        .and_then(Value::as_u64)
                        .filter(|secs| *secs > 0)
                        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
                    let sandbox = match hook.get("sandbox") {
                        None => true,
                        Some(Value::Bool(sandbox)) => *sandbox,
                        Some(other) => {
                            problems.push(format!(
                                "{}: hooks.{name}: `sandbox` must be true or false, not {other}; \
                                 the hook is not used",
                                path.display()
                            ));
                            continue;
                        }
                    };
                    match HookSpec::new(
                        event,
                        matcher.clone(),
                        command.to_string(),
                        timeout,
                        HookSource::Project(path.clone()),
                    ) {
                        Ok(spec) if sandbox => specs.push(spec),
                        Ok(spec) => specs.push(spec.unsandboxed()),
                        Err(message) => {
                            problems.push(format!("{}: hooks.{name}: {message}", path.display()))
                        }
                    }
                }
            }
        }
    }
    (specs, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_settings_and_reports_what_it_cannot_use() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("settings.json");
        std::fs::write(
            &good,
            r#"{"permissions": {}, "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh", "timeout": 5}]}],
                "Stop": [{"hooks": [{"command": "verify.sh"}]}],
                "SubagentStop": [{"hooks": [{"command": "x"}]}],
                "PostToolUse": [{"matcher": "(", "hooks": [{"command": "y"}]}]
            }}"#,
        )
        .unwrap();
        let bad = dir.path().join("broken.json");
        std::fs::write(&bad, "{\n  \"hooks\": [,\n}").unwrap();
        let (specs, problems) = project_hooks(&[good, bad]);
        assert_eq!(specs.len(), 2, "{specs:?}");
        let pre = specs
            .iter()
            .find(|s| s.event == HookEvent::PreToolUse)
            .unwrap();
        assert_eq!(pre.command, "check.sh");
        assert_eq!(pre.timeout, Duration::from_secs(5));
        assert!(
            pre.matches(Some("bash")),
            "Claude's `Bash` matches our `bash`"
        );
        assert!(!pre.matches(Some("bash2")), "matched whole");
        let stop = specs.iter().find(|s| s.event == HookEvent::Stop).unwrap();
        assert_eq!(stop.timeout, DEFAULT_TIMEOUT);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("SubagentStop")));
        assert!(
            problems
                .iter()
                .any(|p| p.contains("not a regular expression"))
        );
        assert!(
            problems.iter().any(|p| p.contains("broken.json:2")),
            "{problems:?}"
        );
    }

    #[test]
    fn config_entries_are_checked() {
        let table = HooksTable {
            stop: vec![HookEntry {
                command: " ".into(),
                ..HookEntry::default()
            }],
            ..HooksTable::default()
        };
        let (key, _) = table.specs(Path::new("c.toml")).unwrap_err();
        assert_eq!(key, "hooks.Stop[0].command");
        let table = HooksTable {
            pre_tool_use: vec![HookEntry {
                matcher: Some("*".into()),
                command: "x".into(),
                timeout_secs: Some(3),
                sandbox: Some(false),
            }],
            ..HooksTable::default()
        };
        let specs = table.specs(Path::new("c.toml")).unwrap();
        assert!(specs[0].matches(Some("anything")));
        assert_eq!(specs[0].timeout, Duration::from_secs(3));
        assert!(!specs[0].sandbox);
    }
}
