//! What the loop asks of a provider: one model call's inputs, independent of the wire API.

use super::model::ModelInfo;
use crate::protocol::message::{AssistantMessage, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
}

impl ThinkingLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
        }
    }
}

pub struct ModelRequest<'a> {
    pub model: &'a ModelInfo,
    pub system_prompt: &'a str,
    pub messages: &'a [Arc<Message>],
    pub tools: &'a [ToolSpec],
    pub thinking: ThinkingLevel,
}

impl ModelRequest<'_> {
    /// The level to ask for, or `None` when no reasoning parameter may be sent: thinking is
    /// off, or the model is known not to take one.
    pub fn reasoning(&self) -> Option<ThinkingLevel> {
        match self.thinking {
            ThinkingLevel::Off => None,
            _ if !self.model.reasoning => None,
            level => Some(level),
        }
    }
}

/// Whether an earlier assistant message came from the provider and model being asked now:
/// only then are its signed thinking blocks / encrypted reasoning sent back (another model
/// cannot verify them).
pub fn same_model(message: &AssistantMessage, provider: &str, model: &str) -> bool {
    message.provider == provider && message.model == model
}
