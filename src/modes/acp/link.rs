//! One session's line to the editor: sending `session/update` notifications, and telling
//! the user things that are neither the answer nor a tool call (a retry, a compaction, a
//! limit) as a notice when the client takes notices, else as a line of thought.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Notice, NoticeSeverity, SessionId, SessionNotification,
    SessionUpdate,
};

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
        if let Err(error) = self.cx.send_notification(notification) {
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
