//! Tools the model can call: the `Tool` trait, the registry of enabled tools (each with its
//! compiled argument schema), and the shared pieces every tool uses (path resolution, output
//! truncation, atomic writes, walking a tree). Executing a call — validation, permission,
//! events, results — is the engine's job (`agent::tool_calls`).

pub(crate) mod atomic;
pub mod background;
pub mod bash;
pub mod diff;
pub mod edit;
mod edit_match;
mod environment;
mod evaluated;
pub mod find;
pub mod freshness;
pub mod grep;
pub mod identity;
pub mod ls;
#[cfg(feature = "lsp")]
pub mod lsp;
pub mod meta;
pub mod path;
pub mod permission;
pub mod process;
pub mod read;
pub mod regular;
pub mod rules;
pub mod schema;
pub mod shell;
pub mod source;
pub mod spill;
pub mod todo;
pub mod truncate;
pub mod visibility;
pub(crate) mod walk;
pub mod web;
mod words;
mod wrapper_specs;
mod wrappers;
pub mod write;

use crate::llm::request::ToolSpec;
use crate::protocol::event::ToolResultPayload;
use crate::protocol::message::Content;
use futures_util::future::BoxFuture;
pub use meta::{OutputKind, Subject};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a tool produced. Failures are results too (`is_error`), never panics or `Err`s:
/// the model sees them and can correct itself.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    pub details: Option<Value>,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![Content::text(text)],
            details: None,
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            is_error: true,
            ..ToolOutput::text(text)
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The result with every configured API key masked (`crate::secrets`), in its text and
    /// its details: what a command printed (`echo $KEY`, a file it read) never reaches the
    /// model, an event or the session.
    pub fn redact_secrets(&mut self) {
        redact_parts(&mut self.content, &mut self.details);
    }
}

/// Every configured API key masked in a result's text blocks and details.
fn redact_parts(content: &mut [Content], details: &mut Option<Value>) {
    for block in content {
        if let Content::Text { text } = block {
            *text = crate::secrets::redact_string(std::mem::take(text));
        }
    }
    if let Some(details) = details {
        crate::secrets::redact_json(details);
    }
}

/// Sends a partial result while a tool runs (e.g. bash output so far).
pub type UpdateSink = Arc<dyn Fn(ToolResultPayload) + Send + Sync>;

/// `sink`, given each partial result with every configured API key masked: what a command
/// prints while it runs reaches no front end (the interface draws partial results as they
/// come) unmasked, as its final result does not.
pub fn masked_updates(sink: UpdateSink) -> UpdateSink {
    Arc::new(move |mut partial: ToolResultPayload| {
        redact_parts(&mut partial.content, &mut partial.details);
        sink(partial)
    })
}

/// Everything a running tool may use.
#[derive(Clone)]
pub struct ToolContext {
    /// The id of the call being run (empty for a command the user runs, `!command`).
    pub tool_call_id: String,
    pub cwd: PathBuf,
    pub cancel: CancellationToken,
    pub on_update: UpdateSink,
    pub settings: Arc<ToolSettings>,
    /// What tree searches must leave out (`None`: nothing).
    pub hidden: Option<Arc<visibility::Hidden>>,
    /// What the model has seen of each file (`read` records, `write` checks).
    pub files: Arc<freshness::FileMemory>,
    /// Where output too long to show whole is kept (the session's own directory).
    pub spill: Arc<spill::SpillDir>,
    /// The agent's background shells (`bash` with `background: true`).
    pub shells: Arc<background::BackgroundShells>,
    /// The session's loopback network namespace its sandboxed commands share
    /// (`[sandbox] allow_local_binding`), made on first use.
    pub session_net: Arc<process::session_net::SessionNet>,
}

/// Tool settings from config.
#[derive(Clone, Debug)]
pub struct ToolSettings {
    /// Default `bash` timeout when the model gives none.
    pub bash_timeout: Duration,
    /// Whether the read-only calls of one message may run at the same time.
    pub execution: Execution,
    /// At most this many calls run at once (at least 1).
    pub max_parallel: usize,
    /// Environment variables commands never see: the providers' API keys, so a command
    /// (`env`, a careless script) cannot put them into a tool result, the session file or
    /// the next request.
    pub hidden_env: Vec<String>,
    /// The program that supervises each command (`process::supervisor`): this binary,
    /// unless a test runs the tools from another one.
    pub supervisor: PathBuf,
    /// The OS sandbox commands run in (`crate::sandbox`); its policy is `None` when
    /// commands run unsandboxed (`--sandbox off`, the sandbox unavailable, or a call the
    /// user allowed to run outside it).
    pub sandbox: crate::sandbox::Sandbox,
    /// `web_fetch`'s limits and host lists (`[web]`).
    pub web: web::WebSettings,
    /// The language servers (`[lsp]`): diagnostics after changes, the `lsp` tool. `None`
    /// without them.
    pub lsp: Option<Arc<crate::lsp::Lsp>>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            bash_timeout: Duration::from_secs(120),
            execution: Execution::Parallel,
            max_parallel: 4,
            hidden_env: Vec::new(),
            supervisor: PathBuf::from(process::DEFAULT_SUPERVISOR),
            sandbox: crate::sandbox::Sandbox::default(),
            web: web::WebSettings::default(),
            lsp: None,
        }
    }
}

/// How the calls of one assistant message are run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// Consecutive read-only calls run concurrently; a mutating call runs alone.
    #[default]
    Parallel,
    /// One call at a time, in order.
    Sequential,
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Whether the tool only looks: read-only calls may run side by side, are allowed in
    /// read-only mode, and (unless the claim is only a hint, below) never need approval.
    fn read_only(&self) -> bool;
    /// Whether `read_only` is only a claim made by someone else (an MCP server's
    /// `readOnlyHint`) rather than a property of our own code. Such a tool still counts as
    /// read-only for running side by side and in read-only mode, but it needs approval in
    /// `ask` mode unless a rule allows it.
    fn read_only_is_claimed(&self) -> bool {
        false
    }
    /// Why a call of a read-only tool that still asks (`read_only_is_claimed`) needs the
    /// user's approval, shown in the dialog; `None`: an MCP server's unchecked claim.
    fn ask_reason(&self, _args: &Value) -> Option<String> {
        None
    }
    /// Whether the tool bounds how many of its calls run at once itself (`task`: its own
    /// limit of children): its calls then start without waiting for a place among the
    /// tools' `max_parallel`.
    fn limits_own_concurrency(&self) -> bool {
        false
    }
    /// The argument naming what a call works on (a path, a command), which permission
    /// rules match against.
    fn subject(&self) -> Subject {
        Subject::None
    }
    /// How the tool's result reads, for front ends that shorten it.
    fn output_kind(&self) -> OutputKind {
        OutputKind::Text
    }
    /// A one-line description of a call for headers and approval dialogs: by default the
    /// subject argument, or the arguments as JSON.
    fn summarize(&self, args: &Value) -> String {
        match self.subject().value(args) {
            Some(value) => value.to_string(),
            None => args.to_string(),
        }
    }
    /// What a call would change, before it runs, for an approval dialog: a unified diff
    /// (`Err` says why there is none, e.g. the edit would not apply). `None` for tools that
    /// change no one file. It reads but never writes; callers run it off the UI thread.
    fn preview(&self, _args: &Value, _cwd: &Path) -> Option<Result<String, String>> {
        None
    }
    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// The names of every built-in tool, in the order the model sees them.
pub const ALL_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "bash",
    "bash_output",
    "kill_shell",
    "grep",
    "find",
    "ls",
    "todo_write",
    #[cfg(feature = "web")]
    "web_fetch",
];

/// The name of the sub-agent tool: not a built-in (the engine adds it when sub-agents are on,
/// `agent::children::task`), but a name the config and the tool lists accept.
pub const TASK_TOOL: &str = "task";

/// The name of the tool the model asks the user with: not a built-in either (the engine's
/// own, `agent::ask_user`), offered only where the tool list names it or there is none.
pub const ASK_USER_TOOL: &str = "ask_user";

/// `names` with the tools that come with `bash` (reading and stopping background shells)
/// added after it, when it is there and they are not.
pub fn with_companions(mut names: Vec<String>) -> Vec<String> {
    if let Some(at) = names.iter().position(|n| n == "bash") {
        let mut insert = at + 1;
        for companion in ["bash_output", "kill_shell"] {
            if !names.iter().any(|n| n == companion) {
                names.insert(insert, companion.to_string());
                insert += 1;
            }
        }
    }
    names
}

/// A built-in tool by name.
fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        "read" => Arc::new(read::ReadTool),
        "write" => Arc::new(write::WriteTool),
        "edit" => Arc::new(edit::EditTool),
        "bash" => Arc::new(bash::BashTool),
        "bash_output" => Arc::new(background::tools::BashOutputTool),
        "kill_shell" => Arc::new(background::tools::KillShellTool),
        "grep" => Arc::new(grep::GrepTool),
        "find" => Arc::new(find::FindTool),
        "ls" => Arc::new(ls::LsTool),
        todo::NAME => Arc::new(todo::TodoWriteTool),
        #[cfg(feature = "web")]
        "web_fetch" => Arc::new(web::WebFetchTool),
        // Not in `ALL_TOOLS`: offered when a language server can run here (`modes`).
        #[cfg(feature = "lsp")]
        lsp::NAME => Arc::new(lsp::LspTool),
        _ => return None,
    };
    Some(tool)
}

/// A built-in tool by name, for what is known about it (permission rules naming tools
/// that are not enabled, front ends describing calls); `None` for an unknown name.
pub fn builtin_tool(name: &str) -> Option<Arc<dyn Tool>> {
    builtin(name)
}

struct Entry {
    tool: Arc<dyn Tool>,
    /// `None` for a tool from outside whose schema our validator cannot compile: its calls
    /// go to it unchecked (it checks them itself).
    schema: Option<schema::ArgumentSchema>,
}

/// The enabled tools.
#[derive(Clone, Default)]
pub struct Tools {
    entries: Vec<Arc<Entry>>,
}

impl Tools {
    /// Check that every name is a built-in tool, without building anything; the error
    /// names the known ones, and `also`: the names a caller accepts beside them (the
    /// engine's `task`).
    pub fn check_names<S: AsRef<str>>(names: &[S], also: &[&str]) -> Result<(), String> {
        let Some(unknown) = names.iter().find(|n| builtin(n.as_ref()).is_none()) else {
            return Ok(());
        };
        let unknown = unknown.as_ref();
        if let Some(feature) = crate::features::tool_left_out(unknown) {
            return Err(format!("tool `{unknown}`: {}", feature.missing()));
        }
        let known: Vec<&str> = ALL_TOOLS
            .iter()
            .copied()
            .chain(also.iter().copied())
            .collect();
        Err(format!(
            "unknown tool `{unknown}` (available: {})",
            known.join(", ")
        ))
    }

    /// The built-in tools named in `names`, each schema compiled once; an unknown name is an
    /// error naming the known ones.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Tools, String> {
        Tools::check_names(names, &[])?;
        let mut entries: Vec<Arc<Entry>> = Vec::new();
        for name in names {
            let Some(tool) = builtin(name.as_ref()) else {
                continue;
            };
            if entries.iter().any(|e| e.tool.name() == tool.name()) {
                continue;
            }
            let schema = schema::ArgumentSchema::compile(tool.name(), &tool.parameters())?;
            entries.push(Arc::new(Entry {
                tool,
                schema: Some(schema),
            }));
        }
        Ok(Tools { entries })
    }

    /// These tools and `tool` (one defined outside this module), its schema compiled; an
    /// error if its name is taken or its schema does not compile.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Result<Tools, String> {
        if self.get(tool.name()).is_some() {
            return Err(format!("a tool named `{}` exists already", tool.name()));
        }
        let schema = schema::ArgumentSchema::compile(tool.name(), &tool.parameters())?;
        self.entries.push(Arc::new(Entry {
            tool,
            schema: Some(schema),
        }));
        Ok(self)
    }

    /// These tools and the tools of a `ToolSource` (MCP servers): a tool whose name is
    /// taken is left out, and one whose schema does not compile is kept without argument
    /// checks (the server checks them); both are logged.
    pub fn with_external(&self, tools: &[Arc<dyn Tool>]) -> Tools {
        let mut combined = self.clone();
        for tool in tools {
            if combined.get(tool.name()).is_some() {
                tracing::warn!(
                    tool = tool.name(),
                    "a tool of that name exists already; left out"
                );
                continue;
            }
            let schema = match schema::ArgumentSchema::compile(tool.name(), &tool.parameters()) {
                Ok(schema) => Some(schema),
                Err(error) => {
                    tracing::warn!(tool = tool.name(), %error, "arguments go unchecked");
                    None
                }
            };
            combined.entries.push(Arc::new(Entry {
                tool: tool.clone(),
                schema,
            }));
        }
        combined
    }

    /// These tools without those `keep` refuses (by name).
    pub fn only(&self, keep: impl Fn(&str) -> bool) -> Tools {
        Tools {
            entries: self
                .entries
                .iter()
                .filter(|entry| keep(entry.tool.name()))
                .cloned()
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entry(name).map(|entry| &entry.tool)
    }

    fn entry(&self, name: &str) -> Option<&Arc<Entry>> {
        self.entries.iter().find(|entry| entry.tool.name() == name)
    }

    /// Check a call's arguments against the tool's schema: `Err` with the text the model is
    /// told. An unknown tool passes (the caller reports it).
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), String> {
        match self.entry(name).and_then(|entry| entry.schema.as_ref()) {
            Some(schema) => schema.check(name, args),
            None => Ok(()),
        }
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|entry| entry.tool.name()).collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .map(|entry| ToolSpec {
                name: entry.tool.name().to_string(),
                description: entry.tool.description().to_string(),
                parameters: entry.tool.parameters(),
            })
            .collect()
    }
}

/// What a tool stopped by an abort or the run's time limit returns.
pub const CANCELLED_TEXT: &str = "Cancelled: the run was stopped.";

/// Run blocking file-system work off the async threads. A stop before it begins means it
/// never begins; once begun, read-only work is abandoned at once on a stop (its result is
/// not needed), while work that changes files runs to its end, so the result always says
/// what really happened.
pub async fn run_blocking(
    cancel: &CancellationToken,
    changes_files: bool,
    work: impl FnOnce() -> ToolOutput + Send + 'static,
) -> ToolOutput {
    let token = cancel.clone();
    let task = crate::tasks::spawn_blocking(move || {
        if token.is_cancelled() {
            return ToolOutput::error(CANCELLED_TEXT);
        }
        work()
    });
    let failed =
        |e: tokio::task::JoinError| ToolOutput::error(format!("The tool failed unexpectedly: {e}"));
    if changes_files {
        return task.await.unwrap_or_else(failed);
    }
    tokio::select! {
        _ = cancel.cancelled() => ToolOutput::error(CANCELLED_TEXT),
        joined = task => joined.unwrap_or_else(failed),
    }
}

/// Deserialise a tool's arguments, with an error the model can act on.
pub fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Value,
) -> Result<T, ToolOutput> {
    serde_json::from_value(args)
        .map_err(|e| ToolOutput::error(format!("Invalid arguments for `{tool}`: {e}")))
}
