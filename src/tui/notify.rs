//! Getting the user's attention while the terminal is not focused (`[tui] notify`,
//! docs/protocol.md §4.7): when a run ends, a call waits for approval or the model asks the
//! user a question (`ask_user`), the terminal's
//! bell or a desktop notification by escape sequence (OSC 9 or OSC 777), wrapped in tmux's
//! passthrough inside tmux. Focus comes from the terminal's focus reports (`CSI I` /
//! `CSI O`, asked for with `CSI ? 1004 h`); a terminal that never reports counts as focused.

use super::app::App;
use crate::config::tui::TuiNotify;
use crate::protocol::event::{AgentEvent, RunStatus};
use std::io::Write;

/// What the terminal is sent for `text` with `method` (`None`: nothing), `tmux` when the
/// interface runs inside tmux.
pub fn sequence(method: TuiNotify, text: &str, tmux: bool) -> Option<Vec<u8>> {
    // One line of plain text: no control characters, no `;` (OSC 777's separator).
    let text: String = text
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .collect();
    let osc = match method {
        TuiNotify::Off => return None,
        // `auto` is resolved at start; here it is the bell.
        TuiNotify::Bell | TuiNotify::Auto => return Some(b"\x07".to_vec()),
        TuiNotify::Osc9 => format!("\x1b]9;{text}\x07"),
        TuiNotify::Osc777 => format!("\x1b]777;notify;agent;{text}\x07"),
    };
    if tmux {
        // tmux passes a DCS `tmux;` sequence through, its ESCs doubled.
        let inner = osc.replace('\x1b', "\x1b\x1b");
        return Some(format!("\x1bPtmux;{inner}\x1b\\").into_bytes());
    }
    Some(osc.into_bytes())
}

/// The one line an event that needs the user is told with, if it is one: the end of a run
/// (the top-level one), a call waiting for approval, or a question of the model's (a
/// sub-agent's are relayed as the parent's own, and told once).
pub fn text_for(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::AgentEnd { status, .. } => Some(
            match status {
                RunStatus::Completed => "agent: done",
                RunStatus::Aborted => "agent: stopped",
                _ => "agent: failed",
            }
            .to_string(),
        ),
        AgentEvent::ToolApprovalRequest { tool_name, .. } => {
            Some(format!("agent: approve {tool_name}?"))
        }
        AgentEvent::UserQuestion { questions, .. } => Some(match questions.first() {
            Some(question) => format!("agent asks: {}", question.question),
            None => "agent asks a question".to_string(),
        }),
        // A sub-agent's approval request and question arrive twice: inside its
        // `subagent_event` and relayed as the parent's own. The relayed one is told.
        _ => None,
    }
}

impl App {
    /// Tell an unfocused terminal about `event` when it needs the user.
    pub fn notify_unfocused(&self, event: &AgentEvent) {
        if !self.status.unfocused {
            return;
        }
        let Some(text) = text_for(event) else {
            return;
        };
        let tmux = std::env::var_os("TMUX").is_some();
        if let Some(bytes) = sequence(self.status.notify, &text, tmux) {
            // Between frames: nothing of a frame is buffered, and none of these bytes
            // moves the cursor.
            let mut out = std::io::stdout();
            let _ = out.write_all(&bytes);
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_method_has_its_sequence() {
        assert_eq!(sequence(TuiNotify::Bell, "x", false).unwrap(), b"\x07");
        assert_eq!(
            sequence(TuiNotify::Osc9, "agent: done", false).unwrap(),
            b"\x1b]9;agent: done\x07"
        );
        assert_eq!(
            sequence(TuiNotify::Osc777, "a;b\x1b", false).unwrap(),
            b"\x1b]777;notify;agent;ab\x07"
        );
        assert_eq!(
            sequence(TuiNotify::Osc9, "x", true).unwrap(),
            b"\x1bPtmux;\x1b\x1b]9;x\x07\x1b\\"
        );
        assert!(sequence(TuiNotify::Off, "x", false).is_none());
    }

    fn approval() -> AgentEvent {
        AgentEvent::ToolApprovalRequest {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: serde_json::json!({"command": "true"}),
            reason: "it runs a command".into(),
            agent_id: Some("a1".into()),
            cwd: "/".into(),
            preview: crate::protocol::event::ApprovalPreview::None,
            suggested_rule: None,
        }
    }

    #[test]
    fn a_question_is_told_once_with_its_first_question() {
        assert_eq!(
            text_for(&approval()).as_deref(),
            Some("agent: approve bash?")
        );
        let question = AgentEvent::UserQuestion {
            tool_call_id: "q1".into(),
            agent_id: None,
            agent_name: None,
            questions: serde_json::from_value(serde_json::json!([
                {"id": "db", "question": "Which database?"}
            ]))
            .unwrap(),
        };
        assert_eq!(
            text_for(&question).as_deref(),
            Some("agent asks: Which database?")
        );
        // A sub-agent's is told through its relayed copy, not a second time.
        for inner in [question, approval()] {
            let wrapped = AgentEvent::SubagentEvent {
                agent_id: "a1".into(),
                parent_tool_call_id: "t1".into(),
                event: Box::new(inner),
            };
            assert_eq!(text_for(&wrapped), None);
        }
    }
}
