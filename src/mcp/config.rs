//! `[mcp_servers.NAME]` in config.toml: the table as written (Codex's key names, so a
//! setup can be copied over; Codex's `_sec`/`_var` spellings are accepted too) and the
//! checked form the manager starts servers from. Mistakes name the key.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// One `[mcp_servers.NAME]` table, exactly as written.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerTable {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    #[serde(alias = "bearer_token_env_var")]
    pub bearer_token_env: Option<String>,
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    #[serde(alias = "startup_timeout_sec")]
    pub startup_timeout_secs: Option<f64>,
    #[serde(alias = "tool_timeout_sec")]
    pub tool_timeout_secs: Option<f64>,
    pub enabled: Option<bool>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    /// Run a stdio server inside the command sandbox (`[sandbox]`).
    pub sandbox: Option<bool>,
    /// The client id `agent mcp login` signs in with, for an authorization server that
    /// offers no dynamic client registration (docs/auth.md).
    pub oauth_client_id: Option<String>,
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the agent's environment (minus the providers' API keys).
        env: BTreeMap<String, String>,
        /// The agent's working directory when not set.
        cwd: Option<PathBuf>,
        /// Whether the server runs inside the command sandbox (`[sandbox]`'s policy).
        sandbox: bool,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// The variable holding a bearer token, read when connecting.
        bearer_token_env: Option<String>,
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// A server's configuration, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    pub enabled: bool,
    /// Only these of the server's tools (by the server's own names), when set.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these.
    pub disabled_tools: Vec<String>,
}

impl ServerConfig {
    /// Whether the server's tool `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == name))
            && !self.disabled_tools.iter().any(|t| t == name)
    }
}

/// A mistake in one table: the key below `mcp_servers.NAME` and why.
#[derive(Debug, PartialEq)]
pub struct TableError {
    pub key: String,
    pub message: String,
}

impl ServerTable {
    /// Check the table of server `name`.
    pub fn resolve(&self, name: &str) -> Result<ServerConfig, TableError> {
        let error = |field: &str, message: String| TableError {
            key: if field.is_empty() {
                format!("mcp_servers.{name}")
            } else {
                format!("mcp_servers.{name}.{field}")
            },
            message,
        };
        if name.trim().is_empty() {
            return Err(error("", "a server needs a name".to_string()));
        }
        let transport = match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(error(
                    "",
                    "set either `command` (a program speaking MCP on stdio) or `url` (streamable HTTP), not both"
                        .to_string(),
                ));
            }
            (None, None) => {
                return Err(error(
                    "",
                    "set `command` (a program speaking MCP on stdio) or `url` (streamable HTTP)"
                        .to_string(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(error("command", "is empty".to_string()));
                }
                for field in ["bearer_token_env", "http_headers", "oauth_client_id"] {
                    let set = match field {
                        "bearer_token_env" => self.bearer_token_env.is_some(),
                        "oauth_client_id" => self.oauth_client_id.is_some(),
                        _ => !self.http_headers.is_empty(),
                    };
                    if set {
                        return Err(error(field, "applies to `url` servers only".to_string()));
                    }
                }
                Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                    sandbox: self.sandbox.unwrap_or(false),
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(error(
                        "url",
                        format!("`{url}` is not an http:// or https:// URL"),
                    ));
                }
                for (field, set) in [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                    ("sandbox", self.sandbox.is_some()),
                ] {
                    if set {
                        return Err(error(
                            field,
                            "applies to `command` servers only".to_string(),
                        ));
                    }
                }
                for header in self.http_headers.keys() {
                    if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        return Err(error(
                            "http_headers",
                            format!("`{header}` is not a valid header name"),
                        ));
                    }
                }
                Transport::Http {
                    url: url.clone(),
                    bearer_token_env: self.bearer_token_env.clone(),
                    headers: self.http_headers.clone(),
                }
            }
        };
        let seconds = |field: &str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(secs) => Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    error(
                        field,
                        format!("must be a positive number of seconds, not {secs}"),
                    )
                }),
        };
        Ok(ServerConfig {
            name: name.to_string(),
            transport,
            startup_timeout: seconds(
                "startup_timeout_secs",
                self.startup_timeout_secs,
                DEFAULT_STARTUP_TIMEOUT,
            )?,
            tool_timeout: seconds(
                "tool_timeout_secs",
                self.tool_timeout_secs,
                DEFAULT_TOOL_TIMEOUT,
            )?,
            enabled: self.enabled.unwrap_or(true),
            enabled_tools: self.enabled_tools.clone(),
            disabled_tools: self.disabled_tools.clone().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> ServerTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn resolves_both_transports_with_defaults() {
        let stdio = table("command = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = { K = \"v\" }\nenabled_tools = [\"echo\"]")
            .resolve("everything")
            .unwrap();
        assert_eq!(stdio.transport.kind(), "stdio");
        assert_eq!(stdio.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(stdio.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert!(stdio.enabled);
        assert!(stdio.offers("echo") && !stdio.offers("add"));
        let http = table(
            "url = \"http://127.0.0.1:3001/mcp\"\nbearer_token_env_var = \"T\"\nstartup_timeout_sec = 2.5\ntool_timeout_secs = 7\ndisabled_tools = [\"x\"]",
        )
        .resolve("docs")
        .unwrap();
        assert_eq!(
            http.transport,
            Transport::Http {
                url: "http://127.0.0.1:3001/mcp".into(),
                bearer_token_env: Some("T".into()),
                headers: BTreeMap::new()
            }
        );
        assert_eq!(http.startup_timeout, Duration::from_millis(2500));
        assert_eq!(http.tool_timeout, Duration::from_secs(7));
        assert!(!http.offers("x") && http.offers("y"));
    }

    #[test]
    fn mistakes_name_the_key() {
        let key = |text: &str| table(text).resolve("s").unwrap_err().key;
        assert_eq!(key(""), "mcp_servers.s");
        assert_eq!(key("command = \"a\"\nurl = \"http://x\""), "mcp_servers.s");
        assert_eq!(key("url = \"ftp://x\""), "mcp_servers.s.url");
        assert_eq!(
            key("url = \"http://x\"\nargs = [\"a\"]"),
            "mcp_servers.s.args"
        );
        assert_eq!(
            key("command = \"a\"\nbearer_token_env = \"T\""),
            "mcp_servers.s.bearer_token_env"
        );
        assert_eq!(
            key("url = \"http://x\"\nsandbox = true"),
            "mcp_servers.s.sandbox"
        );
        assert_eq!(
            key("command = \"a\"\ntool_timeout_secs = 0"),
            "mcp_servers.s.tool_timeout_secs"
        );
        assert_eq!(
            key("command = \"a\"\nstartup_timeout_secs = -1"),
            "mcp_servers.s.startup_timeout_secs"
        );
        assert_eq!(
            key("url = \"http://x\"\nhttp_headers = { \"a b\" = \"1\" }"),
            "mcp_servers.s.http_headers"
        );
        assert!(toml::from_str::<ServerTable>("comand = \"x\"").is_err());
    }
}
