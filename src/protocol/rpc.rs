//! The commands `--mode rpc` reads and the responses it writes (docs/protocol.md §4), as
//! serde types. What each command does is the RPC front end's business.

use super::message::Content;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One command line, without its `id` (read separately, so that even a command that does
/// not parse can be answered with it). Field names are pi's; fields this agent does not
/// know are ignored.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Command {
    Prompt {
        message: String,
        /// Attached after the text: `{"type": "image", "data": base64, "mimeType"}`.
        #[serde(default)]
        images: Vec<Content>,
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        message: String,
        #[serde(default)]
        images: Vec<Content>,
    },
    FollowUp {
        message: String,
        #[serde(default)]
        images: Vec<Content>,
    },
    Abort,
    Approve {
        tool_call_id: String,
        decision: Decision,
        message: Option<String>,
        /// The sub-agent whose request this answers (the request's `agentId`).
        agent_id: Option<String>,
        /// For `allow_rule`: the allow rules to add (the request's `suggestedRule`, or the
        /// user's edit of it).
        #[serde(default)]
        rule: Option<String>,
    },
    /// Answer a `user_question`: the `answers` (`[{id, selected, other?}]`), or
    /// `declined: true` with an optional `message`.
    AnswerQuestion {
        tool_call_id: String,
        agent_id: Option<String>,
        answers: Option<Vec<super::question::Answer>>,
        #[serde(default)]
        declined: bool,
        message: Option<String>,
    },
    GetState,
    /// The permission mode, the sandbox, the rules with their sources, the session grants.
    GetPermissions,
    GetMessages,
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    Compact {
        custom_instructions: Option<String>,
    },
    NewSession,
    SetModel {
        provider: String,
        model_id: String,
    },
    /// Switch to the next of the available models.
    CycleModel,
    /// Switch to the configured profile `name` (only between runs).
    SetProfile {
        name: String,
    },
    GetAvailableModels,
    /// Run a shell command for the user (not the model) and answer with its output.
    Bash {
        command: String,
    },
    /// Stop the `bash` command in progress.
    AbortBash,
    GetSessionStats,
    /// What the next request would hold, by part, in estimated tokens.
    GetContext,
    /// Write the session as one self-contained HTML file.
    ExportHtml {
        output_path: Option<String>,
    },
    GetLastAssistantText,
    /// The commands a prompt can invoke (prompt templates, skills).
    GetCommands,
    /// The checkpoints a rewind can go back to.
    GetCheckpoints,
    /// Go back to before a user message: to checkpoint `checkpointId`, or to the user
    /// message `entryId`. `force` overwrites files changed outside the agent.
    Rewind {
        checkpoint_id: Option<String>,
        entry_id: Option<String>,
        #[serde(default)]
        restore: RestoreMode,
        #[serde(default)]
        force: bool,
    },
    /// Undo the last rewind.
    UndoRewind {
        #[serde(default)]
        force: bool,
    },
    /// Start a new session from entry `entryId` of this one, and continue in it.
    Fork {
        entry_id: String,
    },
    /// The session's tree of entries: every branch.
    GetTree,
    /// Continue the conversation on another branch: its head becomes entry `entryId`; with
    /// `restoreFiles`, the files come back as that branch left them (`force`: even over
    /// changes made outside the agent).
    SwitchBranch {
        entry_id: String,
        #[serde(default)]
        restore_files: bool,
        #[serde(default)]
        force: bool,
    },
    /// The sub-agents started in this process: `data.agents`.
    GetAgents,
    /// Stop one sub-agent (its task call is answered with an error result).
    AbortAgent {
        agent_id: String,
    },
    /// Steer one running sub-agent.
    SteerAgent {
        agent_id: String,
        message: String,
    },
    /// Set the reasoning level (`off`, `minimal`, `low`, `medium`, `high`), as far as the
    /// model offers it.
    SetThinkingLevel {
        level: String,
    },
    /// The next reasoning level the model offers.
    CycleThinkingLevel,
    /// Compact on its own (near the window, after an overflow) or not.
    SetAutoCompaction {
        enabled: bool,
    },
    /// Retry failed model calls or not.
    SetAutoRetry {
        enabled: bool,
    },
    /// End the wait before a retry: the model call ends with its failure.
    AbortRetry,
    /// Name the session.
    SetSessionName {
        name: String,
    },
    /// Set the session's goal, or clear it (`goal` absent, `null` or blank).
    SetGoal {
        #[serde(default)]
        goal: Option<String>,
    },
    /// The user messages a fork can start from.
    GetForkMessages,
    /// Continue in a copy of the session.
    Clone,
    /// A `type` this agent does not know; answered with an error that names it.
    #[serde(other)]
    Unknown,
}

/// What a rewind brings back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RestoreMode {
    /// The conversation and the files.
    #[default]
    Both,
    Conversation,
    Code,
}

impl RestoreMode {
    /// Whether the files are restored.
    pub fn code(self) -> bool {
        matches!(self, RestoreMode::Both | RestoreMode::Code)
    }

    /// Whether the conversation is rewound.
    pub fn conversation(self) -> bool {
        matches!(self, RestoreMode::Both | RestoreMode::Conversation)
    }
}

/// How `prompt` delivers its message while a run is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// The answer to a `tool_approval_request`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    AllowSession,
    /// Allow, and add the allow rules in `rule` for the session.
    AllowRule,
    /// Allow this once, outside the command sandbox.
    AllowUnsandboxed,
    Deny,
}

/// How the steering and follow-up queues deliver: the oldest message at each check, or all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    #[default]
    OneAtATime,
    All,
}

impl QueueMode {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::OneAtATime => "one-at-a-time",
            QueueMode::All => "all",
        }
    }
}

/// The answer to one command line. `type` is always `"response"`, and first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Response {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The command's `type`; `parse` for a line that is not a command at all.
    pub command: String,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    pub fn new(id: Option<Value>, command: &str, result: Result<Option<Value>, String>) -> Self {
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

/// A line read as a command: its `id` (when the line was an object with one), its `type`,
/// and the command — or why it is not one (a `Response` with `command: "parse"` or the
/// command's type).
#[derive(Debug)]
pub struct Parsed {
    pub id: Option<Value>,
    pub kind: String,
    pub command: Command,
}

/// Read one line as a command. `Err` is the response that refuses it.
pub fn parse_line(line: &str) -> Result<Parsed, Box<Response>> {
    let parse_error = |id, why: String| Box::new(Response::new(id, "parse", Err(why)));
    let value: Value =
        serde_json::from_str(line).map_err(|e| parse_error(None, format!("invalid JSON: {e}")))?;
    let Value::Object(object) = &value else {
        return Err(parse_error(None, "a command must be a JSON object".into()));
    };
    let id = object.get("id").cloned();
    let Some(kind) = object.get("type").and_then(Value::as_str).map(String::from) else {
        return Err(parse_error(id, "the command has no \"type\"".into()));
    };
    match serde_json::from_value(value) {
        Ok(Command::Unknown) => Err(Box::new(Response::new(
            id,
            &kind,
            Err(format!("unknown command type `{kind}`")),
        ))),
        Ok(command) => Ok(Parsed { id, kind, command }),
        Err(e) => Err(Box::new(Response::new(
            id,
            &kind,
            Err(format!("invalid `{kind}` command: {e}")),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Parsed, Box<Response>> {
        parse_line(&value.to_string())
    }

    #[test]
    fn commands_parse_with_pi_field_names() {
        let parsed = parse(json!({"id": 7, "type": "prompt", "message": "hi",
                                  "streamingBehavior": "followUp",
                                  "images": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}))
        .unwrap();
        assert_eq!(parsed.id, Some(json!(7)));
        assert_eq!(
            parsed.command,
            Command::Prompt {
                message: "hi".into(),
                images: vec![Content::Image {
                    data: "AA==".into(),
                    mime_type: "image/png".into()
                }],
                streaming_behavior: Some(StreamingBehavior::FollowUp)
            }
        );
        assert_eq!(
            parse(json!({"type": "steer", "message": "s", "unknownField": 1}))
                .unwrap()
                .command,
            Command::Steer {
                message: "s".into(),
                images: vec![]
            }
        );
        assert_eq!(
            parse(json!({"type": "approve", "toolCallId": "c", "decision": "allow_session"}))
                .unwrap()
                .command,
            Command::Approve {
                tool_call_id: "c".into(),
                decision: Decision::AllowSession,
                message: None,
                agent_id: None,
                rule: None,
            }
        );
        assert_eq!(
            parse(json!({"type": "abort", "id": "a"})).unwrap().command,
            Command::Abort
        );
        assert_eq!(
            parse(json!({"type": "export_html", "outputPath": "x.html"}))
                .unwrap()
                .command,
            Command::ExportHtml {
                output_path: Some("x.html".into())
            }
        );
        assert_eq!(
            parse(json!({"type": "get_last_assistant_text"}))
                .unwrap()
                .command,
            Command::GetLastAssistantText
        );
        assert_eq!(
            parse(json!({"type": "set_auto_retry", "enabled": false}))
                .unwrap()
                .command,
            Command::SetAutoRetry { enabled: false }
        );
        assert_eq!(
            parse(json!({"type": "set_model", "provider": "p", "modelId": "m"}))
                .unwrap()
                .command,
            Command::SetModel {
                provider: "p".into(),
                model_id: "m".into()
            }
        );
    }

    #[test]
    fn what_is_not_a_command_is_refused_with_a_reason() {
        let refused = |value: &str| parse_line(value).unwrap_err();
        let response = refused("not json");
        assert_eq!((response.command.as_str(), response.id), ("parse", None));
        assert_eq!(refused("[1]").command, "parse");
        let response = refused(r#"{"id": "x", "type": 5}"#);
        assert_eq!(response.command, "parse");
        assert_eq!(response.id, Some(json!("x")));

        let response = parse(json!({"id": "u", "type": "teleport"})).unwrap_err();
        assert_eq!(response.command, "teleport");
        assert_eq!(
            response.error.as_deref(),
            Some("unknown command type `teleport`")
        );
        let response = parse(json!({"id": "m", "type": "prompt"})).unwrap_err();
        assert_eq!(response.id, Some(json!("m")));
        assert_eq!(
            response.error.as_deref(),
            Some("invalid `prompt` command: missing field `message`")
        );
        let response = parse(json!({"type": "set_follow_up_mode", "mode": "sometimes"}))
            .unwrap_err()
            .error
            .unwrap();
        assert!(
            response.contains("unknown variant `sometimes`") && response.contains("one-at-a-time"),
            "{response}"
        );
    }

    #[test]
    fn responses_put_type_first_and_leave_out_what_is_empty() {
        let ok = Response::new(Some(json!("1")), "abort", Ok(None));
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"type":"response","id":"1","command":"abort","success":true}"#
        );
        let failed = Response::new(None, "parse", Err("bad".into()));
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"type":"response","command":"parse","success":false,"error":"bad"}"#
        );
    }
}
