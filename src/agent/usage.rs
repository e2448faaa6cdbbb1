//! The usage ledger: every model call of the session summed per model, per sub-agent
//! (a child's calls, its own children's included, rolled up into it and into the totals),
//! and the tokens each tool's results added to the context. Kept in the engine's state,
//! rebuilt from the history on resume, reported by `usage_update` and `usage_report`.

use crate::protocol::message::{Message, Usage};
use crate::protocol::usage::{
    AgentUsage, CompactionUsage, ModelUsage, ToolUsage, UsageReport, cost_of,
};
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub(crate) struct UsageLedger {
    total: Usage,
    calls: u64,
    models: Vec<(ModelUsage, bool)>,
    agents: Vec<(AgentUsage, bool)>,
    tools: Vec<ToolUsage>,
    /// The compactions' summary requests (also in the totals and under their model).
    compaction: (CompactionUsage, bool),
}

impl UsageLedger {
    /// The ledger of a (resumed) history: its responses, its tool results, and each
    /// finished `task` call's child usage (`details.usage`, by model unknown: counted
    /// under the child's agent and the totals).
    pub fn from_history(history: &[(String, Arc<Message>)]) -> Self {
        let mut ledger = UsageLedger::default();
        for (_, message) in history {
            ledger.record_message(message);
        }
        ledger
    }

    /// Count one message of a (resumed) history, as `from_history` does.
    pub fn record_message(&mut self, message: &Message) {
        let ledger = self;
        {
            match message {
                Message::Assistant(assistant) => {
                    ledger.record_call(&assistant.provider, &assistant.model, &assistant.usage)
                }
                Message::ToolResult(result) => {
                    ledger.record_tool_result(message);
                    if result.tool_name == super::children::TASK_TOOL
                        && let Some(details) = &result.details
                        && let Some(usage) = details
                            .get("usage")
                            .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
                    {
                        let field = |name: &str| {
                            details
                                .get(name)
                                .and_then(|v| v.as_str())
                                .unwrap_or_default()
                                .to_string()
                        };
                        let agent = ledger.agent(&field("agentId"), &field("agent"));
                        agent.0.usage.add(&usage);
                        agent.0.calls += 1;
                        agent.1 |= usage.price_unknown();
                        ledger.total.add(&usage);
                        ledger.calls += 1;
                    }
                }
                Message::User(_) => {}
            }
        }
    }

    /// Add what `earlier` counted (the older part of a resumed history, counted apart).
    pub fn absorb(&mut self, earlier: UsageLedger) {
        self.total.add(&earlier.total);
        self.calls += earlier.calls;
        for (model, unknown) in earlier.models {
            let entry = self.model(&model.provider, &model.model);
            entry.0.usage.add(&model.usage);
            entry.0.calls += model.calls;
            entry.1 |= unknown;
        }
        for (agent, unknown) in earlier.agents {
            let entry = self.agent(&agent.agent_id, &agent.name);
            entry.0.usage.add(&agent.usage);
            entry.0.calls += agent.calls;
            entry.1 |= unknown;
        }
        for tool in earlier.tools {
            match self.tools.iter_mut().find(|t| t.tool == tool.tool) {
                Some(mine) => {
                    mine.calls += tool.calls;
                    mine.result_tokens = mine.result_tokens.saturating_add(tool.result_tokens);
                }
                None => self.tools.push(tool),
            }
        }
        self.compaction.0.calls += earlier.compaction.0.calls;
        self.compaction.0.usage.add(&earlier.compaction.0.usage);
        self.compaction.1 |= earlier.compaction.1;
    }

    /// One model call of this agent.
    pub fn record_call(&mut self, provider: &str, model: &str, usage: &Usage) {
        self.total.add(usage);
        self.calls += 1;
        let entry = self.model(provider, model);
        entry.0.usage.add(usage);
        entry.0.calls += 1;
        entry.1 |= usage.price_unknown();
    }

    /// One summary request of a compaction: a model call like the others, also shown apart.
    pub fn record_compaction(&mut self, provider: &str, model: &str, usage: &Usage) {
        self.record_call(provider, model, usage);
        self.compaction.0.calls += 1;
        self.compaction.0.usage.add(usage);
        self.compaction.1 |= usage.price_unknown();
    }

    /// One model call of the sub-agent `agent_id` (or of one of its descendants).
    pub fn record_child_call(
        &mut self,
        agent_id: &str,
        name: &str,
        provider: &str,
        model: &str,
        usage: &Usage,
    ) {
        self.record_call(provider, model, usage);
        let agent = self.agent(agent_id, name);
        agent.0.usage.add(usage);
        agent.0.calls += 1;
        agent.1 |= usage.price_unknown();
    }

    /// A tool result entered the context: what it added, under its tool.
    pub fn record_tool_result(&mut self, message: &Message) {
        let Message::ToolResult(result) = message else {
            return;
        };
        let tokens = super::compaction::estimate_tokens(message);
        match self.tools.iter_mut().find(|t| t.tool == result.tool_name) {
            Some(tool) => {
                tool.calls += 1;
                tool.result_tokens = tool.result_tokens.saturating_add(tokens);
            }
            None => self.tools.push(ToolUsage {
                tool: result.tool_name.clone(),
                calls: 1,
                result_tokens: tokens,
            }),
        }
    }

    pub fn total(&self) -> &Usage {
        &self.total
    }

    /// Whether some tokens were used by a model without prices.
    pub fn price_unknown(&self) -> bool {
        self.models.iter().any(|(_, unknown)| *unknown)
            || self.agents.iter().any(|(_, unknown)| *unknown)
    }

    pub fn report(&self) -> UsageReport {
        let input = self
            .total
            .input
            .saturating_add(self.total.cache_read)
            .saturating_add(self.total.cache_write);
        let mut tools = self.tools.clone();
        tools.sort_by_key(|t| std::cmp::Reverse(t.result_tokens));
        let with_cost = |unknown: bool, usage: &Usage| {
            if unknown {
                None
            } else {
                cost_of(usage).or(Some(0.0))
            }
        };
        UsageReport {
            total: self.total.clone(),
            cost: (!self.price_unknown()).then_some(self.total.cost.total),
            price_unknown: self
                .models
                .iter()
                .filter(|(_, unknown)| *unknown)
                .map(|(m, _)| m.model.clone())
                .chain(
                    self.agents
                        .iter()
                        .filter(|(_, unknown)| *unknown)
                        .map(|(a, _)| format!("sub-agent {}", a.agent_id)),
                )
                .collect(),
            cache_hit_ratio: if input == 0 {
                0.0
            } else {
                self.total.cache_read as f64 / input as f64
            },
            models: self
                .models
                .iter()
                .map(|(m, unknown)| ModelUsage {
                    cost: with_cost(*unknown, &m.usage),
                    ..m.clone()
                })
                .collect(),
            agents: self
                .agents
                .iter()
                .map(|(a, unknown)| AgentUsage {
                    cost: with_cost(*unknown, &a.usage),
                    ..a.clone()
                })
                .collect(),
            tools,
            calls: self.calls,
            compaction: CompactionUsage {
                cost: with_cost(self.compaction.1, &self.compaction.0.usage),
                ..self.compaction.0.clone()
            },
        }
    }

    fn model(&mut self, provider: &str, model: &str) -> &mut (ModelUsage, bool) {
        let at = match self
            .models
            .iter()
            .position(|(m, _)| m.provider == provider && m.model == model)
        {
            Some(at) => at,
            None => {
                self.models.push((
                    ModelUsage {
                        provider: provider.to_string(),
                        model: model.to_string(),
                        ..Default::default()
                    },
                    false,
                ));
                self.models.len() - 1
            }
        };
        &mut self.models[at]
    }

    fn agent(&mut self, agent_id: &str, name: &str) -> &mut (AgentUsage, bool) {
        let at = match self.agents.iter().position(|(a, _)| a.agent_id == agent_id) {
            Some(at) => at,
            None => {
                self.agents.push((
                    AgentUsage {
                        agent_id: agent_id.to_string(),
                        name: name.to_string(),
                        ..Default::default()
                    },
                    false,
                ));
                self.agents.len() - 1
            }
        };
        &mut self.agents[at]
    }
}

/// Start counting the older part the engine was built with (`Shared::uncounted`), once.
pub(crate) fn count_earlier(shared: &Arc<super::state::Shared>) {
    let uncounted = super::state::lock(&shared.uncounted).take();
    if let Some(cold) = uncounted {
        count_cold(cold, shared);
    }
}

/// The usage of a cold part (`session::cold`: the older messages of a long resumed
/// context, not read at start) counted on a thread of its own: the part is found first
/// (reading the file back from where opening stopped) and the settings only it says are
/// adopted (`settle_older`), then each message is read back and dropped, and the count is
/// added to the engine's ledger and announced (`usage_update`) — unless the engine moved
/// to another session meanwhile.
pub(crate) fn count_cold(cold: crate::session::cold::ColdPart, shared: &Arc<super::state::Shared>) {
    let shared = Arc::downgrade(shared);
    let session = shared
        .upgrade()
        .map(|s| super::state::lock(&s.session_id).clone());
    let spawned = std::thread::Builder::new()
        .name("cold-usage".to_string())
        .spawn(move || {
            let same_session = |shared: &Arc<super::state::Shared>| {
                session.as_ref() == Some(&*super::state::lock(&shared.session_id))
            };
            if let Err(error) = cold.find() {
                tracing::warn!(%error, "the earlier messages could not be found");
            } else if let Some(shared) = shared.upgrade()
                && same_session(&shared)
            {
                let runtime = shared.runtime.clone();
                crate::tasks::spawn_on(&runtime, async move { adopt_older(&shared).await });
            }
            let mut earlier = UsageLedger::default();
            if let Err(error) =
                cold.for_each(0..cold.len(), |_, message| earlier.record_message(&message))
            {
                tracing::warn!(%error, "the usage of the earlier messages could not be counted");
                return;
            }
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if !same_session(&shared) {
                return;
            }
            let mut state = super::state::lock(&shared.state);
            state.ledger.absorb(earlier);
            shared
                .purse
                .set_session_spent(state.ledger.total().cost.total);
            shared.usage_update(&state);
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "the usage of the earlier messages is not counted");
    }
}

/// What only the older part of a long session said (`session::cold`), taken on once it
/// is found, once: its name and goal (unless one was set since), and — when start-up left
/// them to it — its model and reasoning level, switched to as `set_model` and
/// `set_thinking` do. Run on the usage thread's behalf as soon as the part is found, and
/// by a run before anything else (it waits for the other to finish), so no request goes
/// out with settings the session did not have.
pub(crate) async fn adopt_older(shared: &Arc<super::state::Shared>) {
    let Some(cold) = super::state::lock(&shared.state).history.cold().cloned() else {
        return;
    };
    let mut adoption = cold.adoption().await;
    let Some((model, thinking)) = *adoption else {
        return;
    };
    let finding = cold.clone();
    let older = crate::tasks::spawn_blocking(move || finding.settings())
        .await
        .ok()
        .flatten();
    *adoption = None;
    let Some(older) = older else {
        return; // not found: what needs the older part says why
    };
    let writer = super::state::lock(&shared.session).clone();
    if let Some(writer) = writer {
        let mut state = super::state::lock(&shared.state);
        if writer.name().is_none() && state.session_name.is_none() && older.name.is_some() {
            writer.note_name(older.name.clone());
            state.session_name = older.name.clone();
        }
        if writer.goal().is_none() && state.goal.is_none() && older.goal.is_some() {
            writer.note_goal(older.goal.clone());
            state.goal = older.goal.clone();
            shared.goal_changed(&state, crate::protocol::event::GoalChange::Session);
        }
    }
    let agent = super::Agent {
        shared: shared.clone(),
        owner: false,
    };
    if model
        && let Some((provider, model)) = older.model
        && let Some(models) = shared.models.as_deref()
    {
        let current = shared.settings();
        if current.provider.settings().name != provider || current.model.id != model {
            // As a resumed session's model is taken on (`Resume`).
            match models
                .resolve(&provider, &model)
                .and_then(|(settings, info)| Ok((models.connect(settings)?, info)))
            {
                Ok((client, info)) => agent.set_model(client, info).await,
                Err(error) => tracing::warn!(
                    %error,
                    "the session used {provider}/{model}, which is not available"
                ),
            }
        }
    }
    if thinking && let Some(level) = older.thinking {
        agent.set_thinking(level).await;
    }
}
