//! `--mode rpc`: commands as JSON lines on stdin; responses and events as JSON lines on
//! stdout (docs/protocol.md §4). A bad line gets an error response and the process keeps
//! running. Commands take effect in the order they arrive: one that takes time (`compact`,
//! `new_session`, `set_model`) is finished — events keep flowing — before the next line is
//! read. At end of input, pending approvals are denied, the current run finishes, and the
//! process exits.

mod reader;

use crate::agent::queue::QueueMode;
use crate::agent::{Agent, Approval};
use crate::config::Settings;
use crate::llm::client::Provider;
use crate::modes::output::JsonLines;
use crate::modes::signals::Interrupts;
use crate::modes::{SessionInfo, start_new_session};
use crate::protocol::event::AgentEvent;
use crate::protocol::message::UserMessage;
use futures_util::future::BoxFuture;
use reader::{Frame, LineReader, MAX_LINE_BYTES};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::BufReader;
use tokio::sync::mpsc;

#[derive(Debug, Serialize)]
pub struct Response {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Value>,
    command: String,
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Response {
    fn new(id: Option<Value>, command: &str, result: Result<Option<Value>, String>) -> Self {
        let (success, data, error) = match result {
            Ok(data) => (true, data, None),
            Err(error) => (false, None, Some(error)),
        };
        Response {
            kind: "response",
            id,
            command: command.to_string(),
            success,
            data,
            error,
        }
    }
}

enum Input {
    Frame(Frame),
    End,
}

/// What the command handlers share.
struct Context {
    agent: Arc<Agent>,
    session: Mutex<SessionInfo>,
    settings: Settings,
    responses: mpsc::UnboundedSender<Response>,
}

pub async fn run(agent: Agent, session: SessionInfo, settings: Settings) -> u8 {
    let agent = Arc::new(agent);
    let mut events = agent.subscribe();
    let (input_tx, mut input) = mpsc::unbounded_channel();
    tokio::spawn(read_stdin(input_tx));
    let (responses_tx, mut responses) = mpsc::unbounded_channel();
    let context = Arc::new(Context {
        agent: agent.clone(),
        session: Mutex::new(session),
        settings,
        responses: responses_tx,
    });
    let mut out = JsonLines::default();
    let mut interrupts = Interrupts::new();
    let mut input_open = true;
    let mut pending_commands = 0usize;
    loop {
        tokio::select! {
            biased;
            code = interrupts.next() => {
                agent.abort();
                agent.wait_for_idle().await;
                drain(&mut events, &mut out);
                let _ = out.flush();
                return code;
            }
            response = responses.recv() => {
                if let Some(response) = response {
                    pending_commands = pending_commands.saturating_sub(1);
                    out.push(&response);
                }
            }
            line = input.recv(), if input_open => match line {
                Some(Input::Frame(frame)) => {
                    pending_commands += 1;
                    // Commands take effect in the order they were sent: one that takes time
                    // is finished (events still flowing) before the next line is read.
                    if let Some(command) = handle_frame(&context, frame) {
                        tokio::pin!(command);
                        loop {
                            tokio::select! {
                                response = &mut command => {
                                    let _ = context.responses.send(response);
                                    break;
                                }
                                event = events.recv() => match event {
                                    Some(event) => {
                                        out.push(&event);
                                        drain(&mut events, &mut out);
                                        if out.flush().is_err() {
                                            agent.abort();
                                            return 1;
                                        }
                                    }
                                    None => return 1,
                                },
                            }
                        }
                    }
                }
                Some(Input::End) | None => {
                    input_open = false;
                    // Nobody can answer approvals any more; let the current run finish.
                    agent.set_can_ask(false);
                }
            },
            event = events.recv() => match event {
                Some(event) => out.push(&event),
                None => return 1,
            },
        }
        drain(&mut events, &mut out);
        while let Ok(response) = responses.try_recv() {
            pending_commands = pending_commands.saturating_sub(1);
            out.push(&response);
        }
        if out.flush().is_err() {
            agent.abort();
            return 1;
        }
        if !input_open && pending_commands == 0 && !agent.is_running() {
            agent.wait_for_idle().await;
            drain(&mut events, &mut out);
            let _ = out.flush();
            return 0;
        }
    }
}

fn drain(events: &mut mpsc::UnboundedReceiver<AgentEvent>, out: &mut JsonLines) {
    while let Ok(event) = events.try_recv() {
        out.push(&event);
    }
}

async fn read_stdin(tx: mpsc::UnboundedSender<Input>) {
    let mut reader = LineReader::new(BufReader::new(tokio::io::stdin()), MAX_LINE_BYTES);
    while let Ok(Some(frame)) = reader.next().await {
        if tx.send(Input::Frame(frame)).is_err() {
            return;
        }
    }
    let _ = tx.send(Input::End);
}

/// Answer one input line (every line gets exactly one response; blank, over-long and
/// non-UTF-8 lines get a parse error too, so the count of answers always matches the count
/// of lines).
fn handle_frame(context: &Arc<Context>, frame: Frame) -> Option<BoxFuture<'static, Response>> {
    let respond = |response| {
        let _ = context.responses.send(response);
        None
    };
    let line = match frame {
        Frame::Line(line) => line,
        Frame::Invalid(why) => return respond(Response::new(None, "parse", Err(why))),
    };
    let value: Value = match serde_json::from_str(&line) {
        Ok(value) => value,
        Err(e) => {
            return respond(Response::new(
                None,
                "parse",
                Err(format!("invalid JSON: {e}")),
            ));
        }
    };
    let Value::Object(command) = value else {
        return respond(Response::new(
            None,
            "parse",
            Err("a command must be a JSON object".into()),
        ));
    };
    let id = command.get("id").cloned();
    let Some(kind) = command
        .get("type")
        .and_then(Value::as_str)
        .map(String::from)
    else {
        return respond(Response::new(
            id,
            "parse",
            Err("the command has no \"type\"".into()),
        ));
    };
    match kind.as_str() {
        "compact" | "new_session" | "set_model" => {
            let context = context.clone();
            Some(Box::pin(async move {
                let result = execute_async(&context, &kind, &command).await;
                Response::new(id, &kind, result)
            }))
        }
        _ => respond(Response::new(id, &kind, execute(context, &kind, &command))),
    }
}

fn execute(
    context: &Context,
    kind: &str,
    command: &Map<String, Value>,
) -> Result<Option<Value>, String> {
    let agent = &context.agent;
    match kind {
        "prompt" => {
            let message = UserMessage::text(string_field(command, "message")?);
            match command.get("streamingBehavior").and_then(Value::as_str) {
                None => agent.prompt(message).map_err(|e| e.to_string())?,
                Some("steer") => agent.steer(message),
                Some("followUp") => agent.follow_up(message),
                Some(other) => {
                    return Err(format!(
                        "unknown streamingBehavior `{other}` (expected \"steer\" or \"followUp\")"
                    ));
                }
            }
            Ok(None)
        }
        "steer" => {
            agent.steer(UserMessage::text(string_field(command, "message")?));
            Ok(None)
        }
        "follow_up" => {
            agent.follow_up(UserMessage::text(string_field(command, "message")?));
            Ok(None)
        }
        "abort" => {
            agent.abort();
            Ok(None)
        }
        "approve" => {
            let id = string_field(command, "toolCallId")?;
            let decision = match string_field(command, "decision")?.as_str() {
                "allow" => Approval::Allow,
                "allow_session" => Approval::AllowSession,
                "deny" => Approval::Deny(
                    command
                        .get("message")
                        .and_then(Value::as_str)
                        .map(String::from),
                ),
                other => {
                    return Err(format!(
                        "unknown decision `{other}` (expected allow, allow_session or deny)"
                    ));
                }
            };
            agent.approve(&id, decision).map_err(|e| e.to_string())?;
            Ok(None)
        }
        "get_state" => {
            let state = agent.snapshot();
            let session = context
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            Ok(Some(json!({
                "model": state.model,
                "provider": state.provider,
                "thinkingLevel": state.thinking.as_str(),
                "isStreaming": state.is_running,
                "sessionId": session.id,
                "sessionFile": session.path,
                "messageCount": state.message_count,
                "pendingMessageCount": state.pending_message_count,
                "steeringMode": state.steering_mode.as_str(),
                "followUpMode": state.follow_up_mode.as_str(),
                "permissionMode": state.permission_mode.as_str(),
                "usage": state.usage,
                "contextTokens": state.context_tokens,
                "contextWindow": state.context_window,
                "sessionError": state.session_error,
            })))
        }
        "get_messages" => Ok(Some(json!({ "messages": agent.messages() }))),
        "set_steering_mode" => {
            agent.set_steering_mode(mode_field(command)?);
            Ok(None)
        }
        "set_follow_up_mode" => {
            agent.set_follow_up_mode(mode_field(command)?);
            Ok(None)
        }
        other => Err(format!("unknown command type `{other}`")),
    }
}

async fn execute_async(
    context: &Context,
    kind: &str,
    command: &Map<String, Value>,
) -> Result<Option<Value>, String> {
    let agent = &context.agent;
    match kind {
        "compact" => {
            let instructions = command
                .get("customInstructions")
                .and_then(Value::as_str)
                .map(String::from);
            let (before, after) = agent
                .compact(instructions)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(json!({"tokensBefore": before, "tokensAfter": after})))
        }
        "new_session" => {
            let persistent = context
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .path
                .is_some();
            let info = start_new_session(agent, &context.settings, persistent).await?;
            *context
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = info.clone();
            Ok(Some(
                json!({"sessionId": info.id, "sessionFile": info.path}),
            ))
        }
        "set_model" => {
            let provider_name = string_field(command, "provider")?;
            let model_id = string_field(command, "modelId")?;
            let (provider_settings, model) =
                context.settings.resolve_model(&provider_name, &model_id)?;
            let provider = Provider::new(provider_settings, context.settings.stream_idle_timeout)
                .map_err(|e| e.to_string())?;
            agent.set_model(Arc::new(provider), model).await;
            Ok(Some(
                json!({"provider": provider_name, "modelId": model_id}),
            ))
        }
        other => Err(format!("unknown command type `{other}`")),
    }
}

fn string_field(command: &Map<String, Value>, name: &str) -> Result<String, String> {
    match command.get(name) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("\"{name}\" must be a string")),
        None => Err(format!("missing \"{name}\"")),
    }
}

fn mode_field(command: &Map<String, Value>) -> Result<QueueMode, String> {
    let mode = string_field(command, "mode")?;
    QueueMode::parse(&mode)
        .ok_or_else(|| format!("unknown mode `{mode}` (expected \"one-at-a-time\" or \"all\")"))
}
