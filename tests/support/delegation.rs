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

/// A server whose parent starts two children at once (call `c1` runs `CHILD-A: make a`, `c2`
/// `CHILD-B: make b`) and then answers `parent`; each child runs `touch a.txt` / `touch
/// b.txt` as call `b1` (the same id in both), then answers `child`.
pub async fn two_children_touching(child: &str, parent: &str) -> FakeServer {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "task",
                json!({"description": "first", "prompt": "CHILD-A: make a"}),
            ),
            (
                "c2",
                "task",
                json!({"description": "second", "prompt": "CHILD-B: make b"}),
            ),
        ])),
        Reply::sse(chat::text(parent)),
    ])
    .await;
    for (route, file) in [("CHILD-A", "a.txt"), ("CHILD-B", "b.txt")] {
        server.route(
            route,
            vec![
                Reply::sse(chat::tool_call(
                    "b1",
                    "bash",
                    json!({"command": format!("touch {file}")}),
                )),
                Reply::sse(chat::text(child)),
            ],
        );
    }
    server
}
