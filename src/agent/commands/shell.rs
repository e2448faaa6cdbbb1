//! The user's own shell command (`RunShell`: the interface's `!command`, RPC `bash`): run
//! with the bash tool in the working directory, between two checkpoints so a rewind covers
//! it, not part of the conversation. Also the one place a `ToolContext` is built, for the
//! model's calls and the user's commands alike.

use super::Control;
use crate::agent::Agent;
use crate::agent::state::{Shared, lock};
use crate::protocol::message::join_text;
use crate::protocol::outcome::{CommandError, Outcome, ShellResult};
use crate::tools::bash::BashTool;
use crate::tools::{Tool, ToolContext, ToolSettings, UpdateSink};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Who a tool runs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A call of the model: it sees what the rules hide from it, what it read, its
    /// background shells.
    Model,
    /// The user's own command: none of the model's state.
    User,
}

impl Shared {
    /// What a tool runs with, in the working directory, keeping long output beside the
    /// session.
    pub(crate) fn tool_context(
        &self,
        tool_call_id: String,
        cancel: CancellationToken,
        on_update: UpdateSink,
        settings: Arc<ToolSettings>,
        caller: Caller,
    ) -> ToolContext {
        let cwd = self.settings().cwd.clone();
        let state = lock(&self.state);
        let (hidden, files, shells) = match caller {
            Caller::Model => (
                state.permissions.hidden(),
                state.files.clone(),
                state.shells.clone(),
            ),
            Caller::User => (None, Default::default(), Default::default()),
        };
        ToolContext {
            tool_call_id,
            cwd,
            cancel,
            on_update: crate::tools::masked_updates(on_update),
            settings,
            hidden,
            files,
            spill: state.spill.clone(),
            shells,
            // The user's `!command` reaches the model's dev servers too.
            session_net: state.session_net.clone(),
        }
    }
}

impl Agent {
    /// `RunShell`: `control.cancel` kills it; `control.progress` gets its output so far.
    pub(super) async fn run_shell(
        &self,
        command: String,
        control: Control,
    ) -> Result<Outcome, CommandError> {
        let settings = self.shared.settings().tool_settings.clone();
        let progress = control.progress.unwrap_or_else(|| Arc::new(|_| {}));
        let ctx = self.shared.tool_context(
            String::new(),
            control.cancel,
            progress,
            settings,
            Caller::User,
        );
        let output = self
            .checkpointed(BashTool.execute(json!({ "command": command }), ctx))
            .await?;
        let details = output.details.as_ref();
        let flag = |key: &str| {
            details
                .and_then(|d| d.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Ok(Outcome::Shell(ShellResult {
            output: join_text(&output.content),
            exit_code: details
                .and_then(|d| d.get("exitCode"))
                .and_then(Value::as_i64),
            cancelled: flag("cancelled"),
            truncated: flag("truncated"),
            full_output_path: details
                .and_then(|d| d.get("fullOutputPath"))
                .and_then(Value::as_str)
                .map(str::to_string),
            is_error: output.is_error,
            details: output.details,
        }))
    }
}
