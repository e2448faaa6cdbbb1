//! `--mode rpc`: commands as JSON lines on stdin; responses and events as JSON lines on
//! stdout (protocol.md §4). A bad line gets an error response and the process keeps running.
//! At end of input, pending approvals are denied, the current run finishes, and the process
//! exits.

use super::SessionInfo;
use super::output::JsonLines;
use super::signals::Interrupts;
use crate::agent::event::AgentEvent;
use crate::agent::message::UserMessage;
use crate::agent::queue::QueueMode;
use crate::agent::{Agent, Approval};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
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
    fn ok(id: Option<Value>, command: &str, data: Option<Value>) -> Self {
        Response {
            kind: "response",
            id,
            command: command.to_string(),
            success: true,
            data,
            error: None,
        }
    }

    fn err(id: Option<Value>, command: &str, error: impl Into<String>) -> Self {
        Response {
            kind: "response",
            id,
            command: command.to_string(),
            success: false,
            data: None,
            error: Some(error.into()),
        }
    }
}

enum Input {
    Line(String),
    End,
}

pub async fn run(agent: Agent, session: SessionInfo) -> u8 {
    let mut events = agent.subscribe();
    let (input_tx, mut input) = mpsc::unbounded_channel();
    tokio::spawn(read_stdin(input_tx));
    let mut out = JsonLines::default();
    let mut interrupts = Interrupts::new();
    let mut input_open = true;
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
            line = input.recv(), if input_open => match line {
                Some(Input::Line(line)) => {
                    if let Some(response) = handle_line(&agent, &session, &line) {
                        out.push(&response);
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
        if out.flush().is_err() {
            agent.abort();
            return 1;
        }
        if !input_open && !agent.is_running() {
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
    let mut reader = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).into_owned();
                if tx.send(Input::Line(text)).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(Input::End);
}

/// Answer one input line; blank lines are ignored.
pub fn handle_line(agent: &Agent, session: &SessionInfo, line: &str) -> Option<Response> {
    if line.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => return Some(Response::err(None, "parse", format!("invalid JSON: {e}"))),
    };
    let Value::Object(command) = value else {
        return Some(Response::err(
            None,
            "parse",
            "a command must be a JSON object",
        ));
    };
    let id = command.get("id").cloned();
    let Some(kind) = command.get("type").and_then(Value::as_str) else {
        return Some(Response::err(id, "parse", "the command has no \"type\""));
    };
    Some(match execute(agent, session, kind, &command) {
        Ok(data) => Response::ok(id, kind, data),
        Err(error) => Response::err(id, kind, error),
    })
}

fn execute(
    agent: &Agent,
    session: &SessionInfo,
    kind: &str,
    command: &Map<String, Value>,
) -> Result<Option<Value>, String> {
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
        "compact" | "new_session" | "set_model" => {
            Err(format!("`{kind}` is not available yet in this version"))
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
