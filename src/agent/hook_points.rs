//! Where the engine runs the user's hooks (`extensions::hooks`): before and after each tool
//! call, on each prompt, when the agent would stop, around sessions, before a compaction, and
//! for notifications. Hooks only ever add to what happens (a block, an approval, context);
//! one that fails is reported and the run goes on as if it were not there.

use super::Agent;
use super::run::Run;
use super::state::{Shared, lock};
use crate::extensions::hooks::{HookEvent, HookVerdict, Runner};
use crate::protocol::event::{AgentEvent, NoticeLevel};
use crate::protocol::message::{Content, ToolCall, UserMessage};
use crate::tools::ToolOutput;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Shared {
    /// Run `event`'s hooks with the session's fields and `extra` on stdin. Boxed: it is
    /// awaited from several places, and an optimised build would otherwise copy this
    /// future's code into each codegen unit that awaits it (issue 32).
    pub(crate) fn run_hooks<'a>(
        &'a self,
        event: HookEvent,
        subject: Option<&'a str>,
        extra: Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, HookVerdict> {
        Box::pin(self.run_hooks_unboxed(event, subject, extra, cancel))
    }

    async fn run_hooks_unboxed(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        extra: Value,
        cancel: &CancellationToken,
    ) -> HookVerdict {
        if !self.hooks.has(event) {
            return HookVerdict::default();
        }
        let mut input = Map::new();
        let session = lock(&self.session).clone();
        input.insert(
            "session_id".into(),
            json!(
                session
                    .as_ref()
                    .map(|s| s.id().to_string())
                    .unwrap_or_default()
            ),
        );
        if let Some(session) = &session {
            input.insert(
                "transcript_path".into(),
                json!(session.path().display().to_string()),
            );
        }
        if let Value::Object(extra) = extra {
            input.extend(extra);
        }
        let emit = |event: AgentEvent| self.emit(event);
        // Hooks run as the agent's commands do: below its supervisor, in its sandbox.
        let runner = Runner::of(&self.settings().tool_settings);
        self.hooks
            .run(event, subject, input, &runner, cancel, &emit)
            .await
    }

    /// Tell the Notification hooks (without waiting for them): `kind` is
    /// `permission_prompt` (a call waits for approval) or `idle_prompt` (the run ended).
    pub(crate) fn notify(self: &Arc<Self>, kind: &'static str, message: String) {
        if !self.hooks.has(HookEvent::Notification) {
            return;
        }
        let shared = self.clone();
        crate::tasks::spawn_on(&self.runtime, async move {
            shared
                .run_hooks(
                    HookEvent::Notification,
                    None,
                    json!({"message": message, "notification_type": kind}),
                    &CancellationToken::new(),
                )
                .await;
        });
    }
}

/// What PreToolUse hooks decided about a call.
pub(crate) enum PreTool {
    Go,
    /// Skip the permission question (never deny rules or the sandbox).
    Approve,
    /// Answer the call with this error instead of running it.
    Block(ToolOutput),
    /// The run was aborted (or timed out) while the hooks ran: the call never starts.
    Aborted,
}

impl Run {
    pub(crate) async fn pre_tool_hooks(&self, call: &ToolCall) -> PreTool {
        let verdict = self
            .shared
            .run_hooks(
                HookEvent::PreToolUse,
                Some(&call.name),
                json!({"tool_name": call.name, "tool_input": call.arguments}),
                &self.cancel,
            )
            .await;
        // A hook killed by the abort said nothing, which must not read as "go on".
        if self.cancel.is_cancelled() {
            return PreTool::Aborted;
        }
        match verdict.block {
            Some(reason) => PreTool::Block(
                ToolOutput::error(format!(
                    "A PreToolUse hook blocked this `{}` call, so it was not run: {reason}",
                    call.name
                ))
                .with_details(json!({"denied": "hook"})),
            ),
            None if verdict.approve => PreTool::Approve,
            None => PreTool::Go,
        }
    }

    /// PostToolUse hooks see the result; a block's reason is added to it for the model.
    pub(crate) async fn post_tool_hooks(&self, call: &ToolCall, output: &mut ToolOutput) {
        let response = json!({
            "content": output.content,
            "is_error": output.is_error,
        });
        let verdict = self
            .shared
            .run_hooks(
                HookEvent::PostToolUse,
                Some(&call.name),
                json!({
                    "tool_name": call.name,
                    "tool_input": call.arguments,
                    "tool_response": response,
                }),
                &self.cancel,
            )
            .await;
        if let Some(reason) = verdict.block {
            output.content.push(Content::text(format!(
                "(A PostToolUse hook says: {reason})"
            )));
        }
    }

    /// UserPromptSubmit hooks on a prompt: `None` when one blocked it (the user is told
    /// why; the model never sees it); otherwise the prompt with the hooks' context, and any
    /// SessionStart context not delivered yet, added.
    pub(crate) async fn prompt_hooks(&self, mut message: UserMessage) -> Option<UserMessage> {
        let verdict = self
            .shared
            .run_hooks(
                HookEvent::UserPromptSubmit,
                None,
                json!({"prompt": message.plain_text()}),
                &self.cancel,
            )
            .await;
        if let Some(reason) = verdict.block {
            self.shared.emit(AgentEvent::Notice {
                level: NoticeLevel::Warning,
                message: format!("A UserPromptSubmit hook blocked the prompt: {reason}"),
            });
            return None;
        }
        let mut context = std::mem::take(&mut lock(&self.shared.state).session_context);
        context.extend(verdict.context);
        for text in context {
            message.content.push(Content::text(text));
        }
        Some(message)
    }

    /// Stop hooks when the agent is about to stop: a block's reason is the message the run
    /// goes on with. `active` tells the hooks the run already went on because of one.
    pub(crate) async fn stop_hooks(&self, active: bool) -> Option<String> {
        self.shared
            .run_hooks(
                HookEvent::Stop,
                None,
                json!({"stop_hook_active": active}),
                &self.cancel,
            )
            .await
            .block
    }
}

impl Agent {
    /// Run the SessionStart hooks (`source`: `startup`, `resume` or `clear`); what they print
    /// goes to the model with the next prompt.
    pub async fn session_start(&self, source: &str) {
        let verdict = self
            .shared
            .run_hooks(
                HookEvent::SessionStart,
                None,
                json!({"source": source}),
                &CancellationToken::new(),
            )
            .await;
        lock(&self.shared.state)
            .session_context
            .extend(verdict.context);
    }

    /// Run the SessionEnd hooks (`reason`: `exit`, `clear`, …) and wait for them (each
    /// within its timeout).
    pub async fn session_end(&self, reason: &str) {
        self.shared
            .run_hooks(
                HookEvent::SessionEnd,
                None,
                json!({"reason": reason}),
                &CancellationToken::new(),
            )
            .await;
    }

    /// SessionStart's `source` for the conversation the agent holds now: `resume` when it
    /// has messages, else `startup`.
    pub fn session_source(&self) -> &'static str {
        if lock(&self.shared.state).history.is_empty() {
            "startup"
        } else {
            "resume"
        }
    }

    /// The hooks this agent runs (a front end adds a project's once the user trusts it).
    pub fn hooks(&self) -> &Arc<crate::extensions::hooks::Hooks> {
        &self.shared.hooks
    }
}
