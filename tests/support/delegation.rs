//! Model scripts for sub-agent tests: a parent that delegates with `task` calls, and a
//! child (told apart by its prompt, `CHILD-A: …`) that runs a command before it answers.

use super::chat;
use super::server::{FakeServer, Reply};
use serde_json::json;

/// A `task` call `id` starting a `general` child with `prompt`.
pub fn task_call(id: &str, prompt: &str) -> Reply {
    Reply::sse(chat::tool_call(
        id,
        "task",
        json!({"description": format!("job {id}"), "prompt": prompt}),
    ))
}

/// A server whose parent delegates once (call `c1`, prompt `CHILD-A: go`) and then answers
/// `parent`; the child runs the bash `command` (call `b1`), then answers `child` if given.
pub async fn delegating_once(command: &str, child: Option<&str>, parent: &str) -> FakeServer {
    let server = FakeServer::start(vec![
        task_call("c1", "CHILD-A: go"),
        Reply::sse(chat::text(parent)),
    ])
    .await;
    let mut replies = vec![Reply::sse(chat::tool_call(
        "b1",
        "bash",
        json!({ "command": command }),
    ))];
    replies.extend(child.map(|answer| Reply::sse(chat::text(answer))));
    server.route("CHILD-A", replies);
    server
}
