//! The command line (docs/protocol.md §1), parsed with clap.

use crate::llm::request::ThinkingLevel;
use crate::tools::permission::PermissionMode;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Text,
    Json,
    Rpc,
    /// An Agent Client Protocol server on stdio, for editors.
    Acp,
}

/// The text after `--help`'s options: the environment the agent reads (every built-in
/// provider's key variable, from the provider table), where its configuration file is
/// (`config_file`: this installation's, when it can be found), and a few examples.
pub fn after_help(config_file: Option<&std::path::Path>) -> String {
    let mut keys: Vec<(&str, Vec<&str>)> = Vec::new();
    for provider in crate::config::BUILTIN_PROVIDERS {
        let Some(var) = provider.api_key_env else {
            continue;
        };
        match keys.iter_mut().find(|(known, _)| *known == var) {
            Some((_, names)) => names.push(provider.name),
            None => keys.push((var, vec![provider.name])),
        }
    }
    let mut text =
        String::from("Without -p or --mode, starts the interactive interface.\n\nEnvironment:\n");
    let mut rows: Vec<(String, String)> = keys
        .into_iter()
        .map(|(var, names)| (var.to_string(), format!("API key for {}", names.join(", "))))
        .collect();
    for (var, what) in [
        (
            "AGENT_HOME",
            "one directory for config.toml, sessions, checkpoints and logs",
        ),
        (
            "AGENT_CREDENTIAL_STORE",
            "file or keyring: where `agent login` keeps credentials",
        ),
        ("NO_COLOR", "no colours in the interface"),
        (
            "RUST_LOG",
            "the log level (e.g. debug), over log_level in config.toml",
        ),
    ] {
        rows.push((var.to_string(), what.to_string()));
    }
    let width = rows.iter().map(|(var, _)| var.len()).max().unwrap_or(0) + 2;
    for (var, what) in rows {
        text.push_str(&format!("  {var:<width$}{what}\n"));
    }
    if let Some(path) = config_file {
        text.push_str(&format!("\nConfiguration file:\n  {}\n", path.display()));
    }
    text.push_str(
        "\nExamples:\n\
         \x20 agent                                    the interactive interface\n\
         \x20 agent -p \"why does the build fail?\"      answer once, print it, exit\n\
         \x20 agent -p - < task.md                     the prompt from stdin\n\
         \x20 agent -c                                 continue this directory's latest session\n\
         \x20 agent --provider ollama --model qwen3    a local model\n",
    );
    text
}

#[derive(Debug, Parser)]
#[command(
    name = "agent",
    version,
    about = "An interactive terminal coding agent",
    after_help = "Without -p or --mode, starts the interactive interface.",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// `agent mcp …`: manage MCP servers instead of running the agent.
    #[command(subcommand)]
    pub command: Option<Subcommands>,

    /// The prompt; `-` reads it from stdin
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,

    /// Run the prompt to completion and print the final answer
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output mode: text (default for -p), json (every event as a JSON line), rpc (JSON
    /// commands on stdin), acp (an Agent Client Protocol server for editors)
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<Mode>,

    /// A [profiles.NAME] of the config: provider, model, account, permission mode, sandbox
    /// and MCP servers together (flags still win)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Provider from the config (built in: openai, anthropic)
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// Model id sent to the provider
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// Override the provider's base URL (OpenAI-style APIs include the version, e.g.
    /// http://127.0.0.1:11434/v1)
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,

    /// Override the API key for this run
    #[arg(long = "api-key", value_name = "KEY")]
    pub api_key: Option<String>,

    /// Reasoning level
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub thinking: Option<ThinkingLevel>,

    /// Continue the most recent session of this directory
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "session", "no_session"])]
    pub continue_session: bool,

    /// Resume a session by id (a prefix is enough), or pick one
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "",
          conflicts_with_all = ["session", "no_session"])]
    pub resume: Option<String>,

    /// Use this session file
    #[arg(long, value_name = "PATH", conflicts_with = "no_session")]
    pub session: Option<PathBuf>,

    /// Keep nothing on disk
    #[arg(long = "no-session")]
    pub no_session: bool,

    /// Whether mutating tools need approval
    #[arg(long = "permission-mode", value_enum, value_name = "MODE")]
    pub permission_mode: Option<PermissionMode>,

    /// The OS sandbox commands run in (default workspace-write: writes only in the working
    /// directory, the temp directory and [sandbox] writable_roots; no network)
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<crate::sandbox::SandboxMode>,

    /// Comma-separated tools the model may use (default: all)
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "no_tools"
    )]
    pub tools: Option<Vec<String>>,

    /// Give the model no tools
    #[arg(long = "no-tools")]
    pub no_tools: bool,

    /// Maximum model calls per run (0: no limit)
    #[arg(long = "max-turns", value_name = "N")]
    pub max_turns: Option<u32>,

    /// Maximum tool calls per run (0: no limit)
    #[arg(long = "max-tool-calls", value_name = "N")]
    pub max_tool_calls: Option<u32>,

    /// US dollars a run may spend, its sub-agents included (0: no budget)
    #[arg(long = "max-budget-usd", value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// With -p or --mode json: a final line on stderr with the session's tokens and cost
    #[arg(long)]
    pub verbose: bool,

    /// Wall-clock limit of a run in seconds (0: no limit)
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,

    /// Replace the system prompt
    #[arg(long = "system-prompt", value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Add to the system prompt
    #[arg(long = "append-system-prompt", value_name = "TEXT")]
    pub append_system_prompt: Option<String>,

    /// Config file instead of the default
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Subcommands {
    /// List, add or remove MCP servers in config.toml (comments are kept)
    Mcp(McpArgs),
    /// Serve this machine's providers to other agents over HTTP (provider `api =
    /// "agent-proxy"` on their side); clients authenticate with a bearer token from
    /// AGENT_PROXY_TOKENS
    Proxy(ProxyArgs),
    /// Sign in to a provider: an account (chatgpt, copilot) or an API key typed without
    /// echo (any provider); kept in the OS keyring, else $AGENT_HOME/auth.json
    Login(LoginArgs),
    /// Remove stored credentials (of one provider, or of every provider)
    Logout(LogoutArgs),
    /// Stored credentials: who is signed in, where, until when (never the secret)
    Auth(AuthArgs),
    /// List this directory's sessions, the live ones (served by a running agent) first;
    /// rename, delete or export one
    Sessions(SessionsArgs),
    /// Attach to a live session: JSON lines on stdin go to it, its events come out on
    /// stdout (docs/protocol.md §4.7)
    Attach(AttachArgs),
    /// Keep sessions running with no terminal and reach every live session over HTTP
    /// (docs/protocol.md §4.6)
    Serve(ServeArgs),
    /// Write a commented config file (`agent config init`) or print its path (`agent config
    /// path`)
    Config(ConfigArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on (anything but loopback needs AGENT_SERVE_TOKENS and
    /// TLS, or --insecure-no-tls on a private address)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8788")]
    pub listen: String,
    /// Plain HTTP on a private (not loopback) address
    #[arg(long = "insecure-no-tls")]
    pub insecure_no_tls: bool,
    /// Another name of this server accepted in Host and Origin headers (repeatable)
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Also serve the web client at / (a single page for phones and desktops)
    #[arg(long)]
    pub web: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    /// What to do (nothing: list them)
    #[command(subcommand)]
    pub action: Option<SessionsAction>,
    #[command(flatten)]
    pub list: SessionsListArgs,
}

#[derive(Debug, Default, Args)]
pub struct SessionsListArgs {
    /// Only the live sessions
    #[arg(long)]
    pub live: bool,
    /// One JSON array instead of lines
    #[arg(long)]
    pub json: bool,
    /// The sessions of every directory, not only this one's
    #[arg(long, conflicts_with = "live")]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List this directory's sessions (the default): id, last use, messages, title
    List(SessionsListArgs),
    /// Give a session a title (shown by `agent sessions` and the `agent -r` picker)
    Rename {
        /// The session's id (a prefix is enough)
        id: String,
        /// The new title
        #[arg(num_args = 1.., required = true)]
        title: Vec<String>,
    },
    /// Delete sessions with their tool outputs, sub-agent sessions and the checkpoint data
    /// no other session uses
    Rm {
        /// The sessions' ids (a prefix is enough)
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        /// Do not ask (needed when stdin is not a terminal)
        #[arg(short, long)]
        force: bool,
        /// Only list what would be deleted
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
    /// Remove what deleted sessions left behind: tool outputs and sub-agent sessions beside
    /// no session file, deletions a crash stopped part way, checkpoint data of no session
    Gc {
        /// Only list what would be removed
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
    /// Write a session's current branch as HTML, Markdown or its JSON lines
    Export {
        /// The session's id (a prefix is enough)
        id: String,
        /// The format [default: from the -o file's extension, else html]
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<ExportFormat>,
        /// The file to write (default: stdout)
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Html,
    Md,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: ConfigAction,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Write a commented config.toml (every key, with its default) where the agent reads it
    Init {
        /// Replace an existing file
        #[arg(long)]
        force: bool,
    },
    /// Print where the agent reads its config.toml (also when there is none yet)
    Path,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The live session's id (a prefix is enough; none: the only live session), or the
    /// path of its socket
    pub id: Option<String>,
    /// Replay only the messages after this session entry
    #[arg(long, value_name = "ENTRY")]
    pub since: Option<String>,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The provider to sign in to
    #[arg(long, value_name = "NAME")]
    pub provider: String,
    /// Sign in with a code entered on another device (no browser here, e.g. over SSH)
    #[arg(long)]
    pub device: bool,
    /// Store an API key even for a provider that offers an account sign-in
    #[arg(long = "api-key")]
    pub api_key: bool,
    /// Keep this credential as the named account of the provider, beside its default one
    /// (a profile's `account` chooses it)
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The provider to sign out of (all providers without it)
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Only this account of the provider (without it: the provider's default account;
    /// without --provider too: every credential)
    #[arg(long, value_name = "NAME", requires = "provider")]
    pub account: Option<String>,
}

#[derive(Debug, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub action: AuthAction,
}

#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Who is signed in to what, where the credential is kept, when it expires
    Status,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address and port to listen on
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: String,
    /// Accept clients without a token (only on a loopback address)
    #[arg(long = "insecure-no-auth")]
    pub insecure_no_auth: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// List the configured MCP servers
    List,
    /// Add a server: `agent mcp add NAME -- COMMAND ARGS…` (stdio) or `agent mcp add NAME
    /// --url URL` (streamable HTTP)
    Add {
        /// The server's name (its tools are offered as mcp__NAME__TOOL)
        name: String,
        /// The URL of a streamable-HTTP server
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// An environment variable for a stdio server (repeatable)
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// The variable holding the bearer token of an HTTP server
        #[arg(long = "bearer-token-env", value_name = "VAR")]
        bearer_token_env: Option<String>,
        /// The command of a stdio server and its arguments, after `--`
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server
    Remove {
        /// The server's name
        name: String,
    },
    /// Sign in to a streamable-HTTP server that asks for OAuth (opens a browser)
    Login {
        /// The server's name
        name: String,
    },
    /// Forget the sign-in of a server
    Logout {
        /// The server's name
        name: String,
    },
}

impl Cli {
    /// The front end this command line asks for.
    pub fn front_end(&self) -> FrontEnd {
        match self.mode {
            Some(Mode::Rpc) => FrontEnd::Rpc,
            Some(Mode::Acp) => FrontEnd::Acp,
            Some(Mode::Json) => FrontEnd::Json,
            Some(Mode::Text) => FrontEnd::Print,
            None if self.print => FrontEnd::Print,
            None => FrontEnd::Interactive,
        }
    }

    /// What this command line asks for that `--mode acp` cannot do: there the editor opens
    /// the sessions and sends the prompts.
    pub fn acp_conflict(&self) -> Option<&'static str> {
        if self.front_end() != FrontEnd::Acp {
            return None;
        }
        [
            (!self.prompt.is_empty(), "a PROMPT"),
            (self.print, "-p"),
            (self.continue_session, "-c"),
            (self.resume.is_some(), "-r"),
            (self.session.is_some(), "--session"),
            (self.no_session, "--no-session"),
        ]
        .into_iter()
        .find_map(|(given, what)| given.then_some(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acp_mode_refuses_what_the_editor_decides() {
        let conflict = |args: &[&str]| Cli::parse_from(args).acp_conflict();
        assert_eq!(conflict(&["agent", "--mode", "acp", "--model", "m"]), None);
        assert_eq!(
            conflict(&["agent", "--mode", "acp", "hi"]),
            Some("a PROMPT")
        );
        assert_eq!(conflict(&["agent", "--mode", "acp", "-c"]), Some("-c"));
        assert_eq!(conflict(&["agent", "--mode", "acp", "-r", "x"]), Some("-r"));
        assert_eq!(
            conflict(&["agent", "--mode", "acp", "--no-session"]),
            Some("--no-session")
        );
        assert_eq!(conflict(&["agent", "--mode", "rpc", "-c"]), None);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEnd {
    Interactive,
    Print,
    Json,
    Rpc,
    Acp,
}
