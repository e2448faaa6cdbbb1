//! One session's line to the editor: sending `session/update` notifications, and telling
//! the user things that are neither the answer nor a tool call (a retry, a compaction, a
//! limit) as a notice when the client takes notices, else as a line of thought.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Notice, NoticeSeverity, SessionId, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::{Client, UntypedMessage};

pub struct Link {
    pub cx: ConnectionTo<Client>,
    pub id: SessionId,
    /// The client advertised `session.notices`.
    pub notices: bool,
}

impl Link {
    /// Send an update; a client that is gone is not an error here (the connection's end
    /// closes the session).
    pub fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.id.clone(), update);
        let sent = match spelled_out(&notification) {
            Some(untyped) => self.cx.send_notification(untyped),
            None => self.cx.send_notification(notification),
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "a session update could not be sent");
        }
    }

    pub fn say(&self, text: impl Into<String>) {
        self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text.into()),
        )));
    }

    /// Tell the user something about the run.
    pub fn inform(&self, severity: NoticeSeverity, text: &str) {
        if self.notices {
            self.send(SessionUpdate::Notice(Notice::new(severity, text)));
        } else {
            self.send(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                ContentBlock::from(format!("\n\n[{text}]\n\n")),
            )));
        }
    }
}

/// A `tool_call` update with its `status` and `kind` written out. The protocol crate leaves
/// them out when they are the schema's defaults (`pending`, `other`), so every new call
/// would arrive without a status and an MCP tool's without a kind; docs/protocol.md §7.3
/// promises both, and a client that does not fill in the defaults needs them. `None` for
/// every other update (sent as it is).
fn spelled_out(notification: &SessionNotification) -> Option<UntypedMessage> {
    let SessionUpdate::ToolCall(call) = &notification.update else {
        return None;
    };
    let mut params = serde_json::to_value(notification).ok()?;
    let update = params.get_mut("update")?.as_object_mut()?;
    update
        .entry("status")
        .or_insert(serde_json::to_value(call.status).ok()?);
    update
        .entry("kind")
        .or_insert(serde_json::to_value(call.kind).ok()?);
    UntypedMessage::new(SESSION_UPDATE, params).ok()
}

/// The method of a session update.
const SESSION_UPDATE: &str = "session/update";

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{ToolCall, ToolCallStatus, ToolKind};

    #[test]
    fn a_tool_calls_default_status_and_kind_are_written_out() {
        let call = ToolCall::new("c1", "echo")
            .kind(ToolKind::Other)
            .status(ToolCallStatus::Pending);
        let notification = SessionNotification::new("s1", SessionUpdate::ToolCall(call));
        let sent = spelled_out(&notification).unwrap();
        assert_eq!(sent.method, "session/update");
        assert_eq!(sent.params["sessionId"], "s1");
        assert_eq!(sent.params["update"]["sessionUpdate"], "tool_call");
        assert_eq!(sent.params["update"]["status"], "pending");
        assert_eq!(sent.params["update"]["kind"], "other");
        let chunk = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from("x")));
        assert!(spelled_out(&SessionNotification::new("s1", chunk)).is_none());
    }
}
