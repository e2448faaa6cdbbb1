//! The on-disk `config.toml`, exactly as written by the user. Unknown keys are errors (a
//! typo must not be silently ignored); every key is documented in `config.example.toml`.

use crate::llm::provider::Api;
use crate::llm::request::ThinkingLevel;
use crate::protocol::rpc::QueueMode;
use crate::tools::Execution;
use crate::tools::permission::PermissionMode;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The profile used when `--profile` names none.
    pub profile: Option<String>,
    /// `[profiles.NAME]`: provider, model, account, permission mode, sandbox, MCP servers.
    #[serde(default)]
    pub profiles: BTreeMap<String, super::profiles::ProfileTable>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub thinking: Option<ThinkingLevel>,
    pub steering_mode: Option<QueueMode>,
    pub follow_up_mode: Option<QueueMode>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub log_level: Option<String>,
    /// Seconds (fractions allowed) for each stage of a request; see `llm::timeouts`.
    pub connect_timeout_secs: Option<f64>,
    pub response_timeout_secs: Option<f64>,
    pub stream_idle_timeout_secs: Option<f64>,
    pub stream_content_timeout_secs: Option<f64>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub permissions: PermissionsConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    #[serde(default)]
    pub compaction: CompactionConfig,
    #[serde(default)]
    pub guard: GuardConfig,
    /// Where each `[permissions]` rule is written (not a key: read from the text).
    #[serde(skip)]
    pub rule_lines: RuleLines,
    /// `[sandbox]`: the OS sandbox commands run in.
    #[serde(default)]
    pub sandbox: SandboxTable,
    /// `[mcp_servers.NAME]`: MCP servers whose tools the model may use.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, crate::mcp::config::ServerTable>,
    #[serde(default)]
    pub checkpoints: CheckpointsConfig,
    /// `[proxy]`: `agent proxy`'s tokens and limits.
    #[serde(default)]
    pub proxy: ProxyConfig,
    /// `[serve]`: `agent serve`'s certificate (docs/protocol.md §4.6).
    #[serde(default)]
    pub serve: ServeConfig,
    /// A command (program and arguments) run with a JSON description appended when a run
    /// ends or waits for approval (docs/protocol.md §4.7).
    pub notify: Option<Vec<String>>,
    /// `[tui]`: the interactive interface's own settings.
    #[serde(default)]
    pub tui: super::tui::TuiTable,
    /// `[web]`: what `web_fetch` may reach.
    #[serde(default)]
    pub web: super::web::WebConfig,
    /// `[[hooks.EVENT]]`: commands run on lifecycle events (docs/extensions.md).
    #[serde(default)]
    pub hooks: crate::extensions::hooks::config::HooksTable,
    /// `[agents]`: the `task` tool's sub-agents.
    #[serde(default)]
    pub agents: AgentsTable,
    /// `[lsp]`, `[lsp.NAME]`: language servers (diagnostics after edits, the `lsp` tool).
    #[serde(default)]
    pub lsp: super::lsp::LspTable,
    /// `[keys]`: the interface's key bindings (action name → chords), checked by the TUI.
    #[serde(default)]
    pub keys: super::keys::KeysTable,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsTable {
    pub enabled: Option<bool>,
    pub max_parallel: Option<usize>,
    pub max_depth: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsConfig {
    pub enabled: Option<bool>,
    pub max_file_bytes: Option<u64>,
    pub max_files: Option<usize>,
    pub keep_days: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// The variable holding the accepted bearer tokens, comma-separated (default
    /// `AGENT_PROXY_TOKENS`).
    pub tokens_env: Option<String>,
    /// The largest `/v1/stream` request body, in bytes.
    pub max_body_bytes: Option<u64>,
    /// How many streams one token may have open at once.
    pub max_streams_per_token: Option<usize>,
    /// Seconds a stream may go without a byte from the provider before it is ended.
    pub idle_timeout_secs: Option<f64>,
    /// Seconds a client has to send a `/v1/stream` request's body.
    pub body_timeout_secs: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// PEM files of the certificate chain and its private key: with both, `agent serve`
    /// speaks HTTPS.
    pub tls_cert: Option<std::path::PathBuf>,
    pub tls_key: Option<std::path::PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    pub enabled: Option<bool>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub api: Option<Api>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub api_key_command: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whether this provider's models take image input (each model's entry can say
    /// otherwise).
    pub images: Option<bool>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// US dollars per million tokens.
    pub cost_input: Option<f64>,
    pub cost_output: Option<f64>,
    pub cost_cache_read: Option<f64>,
    pub cost_cache_write: Option<f64>,
    pub reasoning: Option<bool>,
    pub images: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    pub mode: Option<crate::sandbox::SandboxMode>,
    pub network: Option<bool>,
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Hosts commands reach through the egress proxy (parsed as they are read, so that a bad
    /// entry is reported with its key and line).
    #[serde(default)]
    pub allow_hosts: Vec<crate::sandbox::egress::Pattern>,
    /// Paths and patterns commands and the file tools may not read, added to the defaults.
    #[serde(default)]
    pub deny_read: Vec<String>,
    /// Exceptions to `deny_read` (its defaults included).
    #[serde(default)]
    pub allow_read: Vec<String>,
    /// Loopback listeners for sandboxed commands in one network namespace per session.
    pub allow_local_binding: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_turns: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub timeout_secs: Option<u64>,
    /// US dollars per run (`--max-budget-usd`), per session; output tokens per run.
    pub budget_usd: Option<f64>,
    pub session_budget_usd: Option<f64>,
    pub max_output_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    pub initial_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
    pub max_retry_delay_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    pub enabled: Option<Vec<String>>,
    pub bash_timeout_secs: Option<u64>,
    pub execution: Option<Execution>,
    pub max_parallel: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardConfig {
    pub enabled: Option<bool>,
    pub repeat_threshold: Option<u32>,
}

/// The line of each rule of `[permissions]` allow, ask and deny (1-based; `None` where
/// unknown), so that a verdict can cite `config.toml:14`.
#[derive(Debug, Default)]
pub struct RuleLines {
    pub allow: Vec<Option<usize>>,
    pub ask: Vec<Option<usize>>,
    pub deny: Vec<Option<usize>>,
}

impl RuleLines {
    fn of(text: &str) -> RuleLines {
        let Ok(document) = toml_edit::Document::parse(text) else {
            return RuleLines::default();
        };
        let lines = |key: &str| -> Vec<Option<usize>> {
            document
                .as_item()
                .get("permissions")
                .and_then(|p| p.get(key))
                .and_then(|list| list.as_array())
                .map(|array| {
                    array
                        .iter()
                        .map(|value| {
                            value.span().map(|span| {
                                text[..span.start.min(text.len())].matches('\n').count() + 1
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        RuleLines {
            allow: lines("allow"),
            ask: lines("ask"),
            deny: lines("deny"),
        }
    }

    pub fn line(&self, kind: crate::tools::rules::RuleKind, index: usize) -> Option<usize> {
        use crate::tools::rules::RuleKind;
        let list = match kind {
            RuleKind::Allow => &self.allow,
            RuleKind::Ask => &self.ask,
            RuleKind::Deny => &self.deny,
        };
        list.get(index).copied().flatten()
    }
}

/// Parse config text. The error names the key (dotted path) and line where possible.
pub fn parse(text: &str) -> Result<FileConfig, (Option<String>, String)> {
    let deserializer = toml::Deserializer::parse(text).map_err(|e| (None, describe(text, &e)))?;
    let mut config: FileConfig = serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let message = match element_line(text, &path) {
            // The parser points at the whole list; the entry's own line is more use.
            Some(line) => format!(
                "{} (line {line})",
                e.inner()
                    .message()
                    .trim_end_matches('\n')
                    .replace('\n', " ")
            ),
            None => describe(text, e.inner()),
        };
        let key = (path != ".").then_some(path);
        (key, message)
    })?;
    config.rule_lines = RuleLines::of(text);
    config.keys.read_lines(text);
    Ok(config)
}

/// The line of the list entry a key path such as `sandbox.allow_hosts[1]` names.
fn element_line(text: &str, path: &str) -> Option<usize> {
    let (list, index) = path.strip_suffix(']')?.rsplit_once('[')?;
    let index: usize = index.parse().ok()?;
    let document = toml_edit::Document::parse(text).ok()?;
    let mut item = document.as_item();
    for key in list.split('.') {
        item = item.get(key)?;
    }
    let span = item.as_array()?.get(index)?.span()?;
    Some(text[..span.start.min(text.len())].matches('\n').count() + 1)
}

fn describe(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end_matches('\n').replace('\n', " ");
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("{message} (line {line})")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_key() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml"))
                .unwrap();
        // The example documents keys in comments; uncomment the assignments and it must parse.
        let uncommented: String = text
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if looks_like_setting(rest) => rest.to_string(),
                _ => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let config = parse(&uncommented).unwrap_or_else(|e| panic!("{e:?}\n{uncommented}"));
        assert!(config.providers.contains_key("my-local"));
        assert!(config.profiles.contains_key("work"));
    }

    fn looks_like_setting(line: &str) -> bool {
        line.starts_with('[')
            || line
                .split_once(" = ")
                .is_some_and(|(k, _)| !k.contains(' '))
    }

    #[test]
    fn rules_know_their_lines() {
        let config = parse(
            "model = \"x\"\n[permissions]\nallow = [\n  \"read\",\n  \"bash(ls*)\",\n]\ndeny = [\"bash(rm *)\"]\n",
        )
        .unwrap();
        use crate::tools::rules::RuleKind;
        assert_eq!(config.rule_lines.line(RuleKind::Allow, 1), Some(5));
        assert_eq!(config.rule_lines.line(RuleKind::Deny, 0), Some(7));
        assert_eq!(config.rule_lines.line(RuleKind::Ask, 0), None);
    }

    #[test]
    fn errors_name_the_key_and_line() {
        let (key, message) = parse("[limits]\nmax_turns = \"many\"\n").unwrap_err();
        assert_eq!(key.as_deref(), Some("limits.max_turns"));
        assert!(message.contains("line 2"), "{message}");
        let (key, message) = parse("permission_mode = \"sometimes\"").unwrap_err();
        assert_eq!(key.as_deref(), Some("permission_mode"));
        assert!(message.contains("sometimes"), "{message}");
        let (key, message) = parse("modle = \"x\"").unwrap_err();
        assert!(
            message.contains("unknown field `modle`"),
            "{key:?} {message}"
        );
        let (_, message) = parse("model = ").unwrap_err();
        assert!(message.contains("line 1"), "{message}");
    }
}
