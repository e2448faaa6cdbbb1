//! Progress notifications to the call they belong to. rmcp gives every request its own
//! progress token, known once the request is sent; a notification that arrives before its
//! call is registered (a fast server) is held briefly and delivered on registration.

use crate::protocol::event::ToolResultPayload;
use crate::protocol::message::Content;
use crate::tools::UpdateSink;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Notifications kept for calls not registered yet.
const EARLY: usize = 32;

#[derive(Default)]
pub struct ProgressRouter {
    state: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    sinks: HashMap<ProgressToken, UpdateSink>,
    early: VecDeque<ProgressNotificationParam>,
}

impl ProgressRouter {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Send the progress of the call with `token` to `sink` from now on (and what came early).
    pub fn register(&self, token: ProgressToken, sink: UpdateSink) {
        let early: VecDeque<ProgressNotificationParam> = {
            let mut routes = self.routes();
            routes.sinks.insert(token.clone(), sink.clone());
            let (mine, others) = std::mem::take(&mut routes.early)
                .into_iter()
                .partition(|p| p.progress_token == token);
            routes.early = others;
            mine
        };
        for param in early {
            sink(payload(&param));
        }
    }

    pub fn unregister(&self, token: &ProgressToken) {
        self.routes().sinks.remove(token);
    }

    /// A notification from the server.
    pub fn deliver(&self, param: ProgressNotificationParam) {
        let sink = {
            let mut routes = self.routes();
            match routes.sinks.get(&param.progress_token) {
                Some(sink) => sink.clone(),
                None => {
                    if routes.early.len() == EARLY {
                        routes.early.pop_front();
                    }
                    routes.early.push_back(param);
                    return;
                }
            }
        };
        sink(payload(&param));
    }
}

/// A progress notification as a `tool_execution_update`: a line of text, and the numbers in
/// `details`.
fn payload(param: &ProgressNotificationParam) -> ToolResultPayload {
    let amount = match param.total {
        Some(total) => format!("{}/{}", param.progress, total),
        None => param.progress.to_string(),
    };
    let text = match param.message.as_deref().filter(|m| !m.is_empty()) {
        Some(message) => format!("[progress {amount}] {message}"),
        None => format!("[progress {amount}]"),
    };
    ToolResultPayload {
        content: vec![Content::text(text)],
        details: Some(json!({
            "progress": param.progress,
            "total": param.total,
            "message": param.message,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use std::sync::Arc;

    #[test]
    fn early_notifications_reach_their_call() {
        let router = ProgressRouter::default();
        let token = |n| ProgressToken(NumberOrString::Number(n));
        router.deliver(
            ProgressNotificationParam::new(token(1), 1.0)
                .with_total(3.0)
                .with_message("one"),
        );
        router.deliver(ProgressNotificationParam::new(token(2), 5.0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        router.register(
            token(1),
            Arc::new(move |p: ToolResultPayload| sink_seen.lock().unwrap().push(p.content)),
        );
        router.deliver(ProgressNotificationParam::new(token(1), 2.0).with_total(3.0));
        router.unregister(&token(1));
        router.deliver(ProgressNotificationParam::new(token(1), 3.0));
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                vec![Content::text("[progress 1/3] one")],
                vec![Content::text("[progress 2/3]")]
            ]
        );
    }
}
