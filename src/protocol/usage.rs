//! What a session's model calls used and cost, broken down (per model, per sub-agent, per
//! tool), and what the next request holds (`/context`): the payloads of `usage_update`,
//! `get_session_stats.usage` and `get_context` (docs/protocol.md §3.5). Serde types only;
//! the engine's ledger (`agent::usage`) fills them.

use super::message::Usage;
use serde::{Deserialize, Serialize};

/// The session's usage, every model call counted once: the agent's own and its
/// sub-agents' (rolled up), also those a compaction took out of the context.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// Everything, the sub-agents included.
    pub total: Usage,
    /// Dollars, or `None` when some tokens were used by a model without prices: the cost
    /// is then unknown, never 0 (`priceUnknown` names the models).
    pub cost: Option<f64>,
    pub price_unknown: Vec<String>,
    /// Cache reads over all input tokens (input + cache read + cache write); 0 without input.
    pub cache_hit_ratio: f64,
    pub models: Vec<ModelUsage>,
    pub agents: Vec<AgentUsage>,
    /// Tools by the tokens their results added to the context, most first.
    pub tools: Vec<ToolUsage>,
    /// Model calls made (the sub-agents' and the compactions' included).
    pub calls: u64,
    /// The summary requests of this agent's compactions: also counted in `total`, `calls`
    /// and under their model in `models`.
    #[serde(default)]
    pub compaction: CompactionUsage,
}

/// What compacting the context cost: the summary requests, however many.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionUsage {
    pub calls: u64,
    pub usage: Usage,
    /// Dollars, `None` when the model had no prices.
    pub cost: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub provider: String,
    pub model: String,
    pub calls: u64,
    pub usage: Usage,
    pub cost: Option<f64>,
}

/// One sub-agent (`task` call), its own descendants rolled up into it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsage {
    pub agent_id: String,
    /// The definition it ran.
    pub name: String,
    pub calls: u64,
    pub usage: Usage,
    pub cost: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUsage {
    pub tool: String,
    pub calls: u64,
    /// Estimated tokens (characters / 4) of the tool's results: what it added to the
    /// context, read again by every later request until a compaction.
    pub result_tokens: u64,
}

/// What the next request would hold, by part, in estimated tokens (characters / 4; an
/// image counts 1,000).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextReport {
    pub parts: Vec<ContextPart>,
    /// The sum of the parts.
    pub total: u64,
    pub context_window: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPart {
    /// `system_prompt`, `context_files`, `skills`, `tools_builtin`, `tools_mcp:<server>`,
    /// `messages`, `attachments`.
    pub part: String,
    pub tokens: u64,
}

/// The cost of `usage`, `None` when its tokens had no price.
pub fn cost_of(usage: &Usage) -> Option<f64> {
    (!usage.price_unknown()).then_some(usage.cost.total)
}
