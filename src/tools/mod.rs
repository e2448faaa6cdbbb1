//! Tools the model can call: the `Tool` trait, the registry of enabled tools, and the shared
//! pieces every tool uses (path resolution, output truncation). Executing a call — permission,
//! events, results — is the engine's job (`agent::tool_calls`).

pub mod bash;
pub mod path;
pub mod permission;
pub mod read;
pub mod truncate;

use crate::agent::event::ToolResultPayload;
use crate::agent::message::Content;
use crate::llm::request::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::path::PathBuf;
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
}

/// Sends a partial result while a tool runs (e.g. bash output so far).
pub type UpdateSink = Arc<dyn Fn(ToolResultPayload) + Send + Sync>;

/// Everything a running tool may use.
#[derive(Clone)]
pub struct ToolContext {
    pub cwd: PathBuf,
    pub cancel: CancellationToken,
    pub on_update: UpdateSink,
    pub settings: Arc<ToolSettings>,
}

/// Tool settings from config.
#[derive(Clone, Debug)]
pub struct ToolSettings {
    /// Default `bash` timeout when the model gives none.
    pub bash_timeout: Duration,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            bash_timeout: Duration::from_secs(120),
        }
    }
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Whether the tool only looks: read-only tools never need approval.
    fn read_only(&self) -> bool;
    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// The names of every built-in tool, in the order the model sees them.
pub const ALL_TOOLS: &[&str] = &["read", "bash"];

/// The enabled tools.
#[derive(Clone, Default)]
pub struct Tools {
    tools: Vec<Arc<dyn Tool>>,
}

impl Tools {
    /// The built-in tools named in `names`; an unknown name is an error naming the known ones.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Tools, String> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for name in names {
            let tool: Arc<dyn Tool> = match name.as_ref() {
                "read" => Arc::new(read::ReadTool),
                "bash" => Arc::new(bash::BashTool),
                other => {
                    return Err(format!(
                        "unknown tool `{other}` (available: {})",
                        ALL_TOOLS.join(", ")
                    ));
                }
            };
            if !tools.iter().any(|t| t.name() == tool.name()) {
                tools.push(tool);
            }
        }
        Ok(Tools { tools })
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                parameters: tool.parameters(),
            })
            .collect()
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
