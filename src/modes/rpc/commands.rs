//! What each RPC line does: an engine command (the mapping is `protocol::rpc_engine`'s)
//! carried out by `Agent::execute`, its outcome written as the line's `data` (`answers`);
//! or a line the RPC answers itself — the read-only queries (`queries`, `time_travel`) and
//! the HTML export (`actions`). Which commands take time is the RPC's own ordering policy
//! (docs/protocol.md §4.2).

use super::Context;
use super::actions;
use super::answers;
use super::queries;
use super::time_travel;
use crate::agent::commands::Control;
use crate::protocol::command::Command as EngineCommand;
use crate::protocol::rpc::Command;
use crate::protocol::rpc_engine::Request;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A line's `data` (`None`: no `data`), or its error.
pub(crate) type Answer = Result<Option<Value>, String>;

/// How a command was taken up.
pub(crate) enum Started {
    /// It took effect at once.
    Done(Answer),
    /// It takes time: its result, and what stops it.
    Slow {
        result: BoxFuture<'static, Answer>,
        cancel: CancellationToken,
        /// A `bash` command, which `abort_bash` stops too.
        bash: bool,
    },
}

/// Take up the line `command` (of type `kind`).
pub(crate) fn start(context: &Arc<Context>, kind: &str, command: Command) -> Started {
    match command.request() {
        Err(why) => Started::Done(Err(why)),
        Ok(Request::Engine(command)) => execute(context, kind, command),
        Ok(Request::Local(command)) => local(context, command),
    }
}

/// An engine command: a quick one is answered at once; one that takes time is finished
/// before the next line is taken up, and `abort` stops it (what that means per command:
/// docs/protocol.md §3.4).
fn execute(context: &Context, kind: &str, command: EngineCommand) -> Started {
    let cancel = CancellationToken::new();
    let bash = matches!(command, EngineCommand::RunShell { .. });
    let quick = takes_effect_at_once(&command);
    let control = Control {
        cancel: cancel.clone(),
        progress: None,
    };
    let agent = context.agent.clone();
    let kind = kind.to_string();
    let mut result: BoxFuture<'static, Answer> =
        Box::pin(async move { answers::answer(&kind, agent.execute(command, control).await) });
    if quick && let Some(answer) = (&mut result).now_or_never() {
        return Started::Done(answer);
    }
    Started::Slow {
        result,
        cancel,
        bash,
    }
}

/// The commands that neither wait for a model, a file nor a process.
fn takes_effect_at_once(command: &EngineCommand) -> bool {
    matches!(
        command,
        EngineCommand::Prompt { .. }
            | EngineCommand::Abort
            | EngineCommand::UnqueueLast
            | EngineCommand::Approve { .. }
            | EngineCommand::SetPermissionMode { .. }
            | EngineCommand::SetQueueMode { .. }
            | EngineCommand::SetAutoCompaction { .. }
            | EngineCommand::SetAutoRetry { .. }
            | EngineCommand::AbortRetry
            | EngineCommand::ExpandCommand { .. }
            | EngineCommand::SteerAgent { .. }
            | EngineCommand::AbortAgent { .. }
    )
}

/// A line the RPC answers itself.
fn local(context: &Arc<Context>, command: Command) -> Started {
    let agent = &context.agent;
    let answer = match command {
        // No `bash` is in progress (one in progress is stopped when this is read).
        Command::AbortBash => Ok(None),
        Command::GetState => Ok(Some(queries::state(context))),
        Command::GetPermissions => serde_json::to_value(agent.permissions())
            .map(Some)
            .map_err(|e| e.to_string()),
        Command::GetMessages => Ok(Some(time_travel::messages(context))),
        Command::GetCheckpoints => Ok(Some(time_travel::checkpoints(context))),
        Command::GetSessionStats => Ok(Some(queries::session_stats(context))),
        Command::GetContext => Ok(Some(
            serde_json::to_value(context.agent.context_report()).unwrap_or_default(),
        )),
        Command::GetLastAssistantText => Ok(Some(queries::last_assistant_text(context))),
        Command::GetAvailableModels => Ok(Some(queries::available_models(context))),
        Command::GetCommands => Ok(Some(queries::commands(context))),
        Command::GetAgents => Ok(Some(json!({ "agents": agent.agents() }))),
        Command::ExportHtml { output_path } => {
            return slow(context, move |context, cancel| {
                Box::pin(async move { actions::export_html(&context, output_path, &cancel).await })
            });
        }
        Command::GetTree => {
            return slow(context, |context, _| {
                Box::pin(async move { time_travel::tree(&context).await })
            });
        }
        Command::GetForkMessages => {
            return slow(context, |context, _| {
                Box::pin(async move { time_travel::fork_messages(&context).await })
            });
        }
        Command::Unknown => Err("unknown command type".to_string()),
        _ => Err("internal error: an engine command was answered by the RPC itself".to_string()),
    };
    Started::Done(answer)
}

/// A line of the RPC's own that takes time.
fn slow(
    context: &Arc<Context>,
    run: impl FnOnce(Arc<Context>, CancellationToken) -> BoxFuture<'static, Answer>,
) -> Started {
    let cancel = CancellationToken::new();
    Started::Slow {
        result: run(context.clone(), cancel.clone()),
        cancel,
        bash: false,
    }
}
