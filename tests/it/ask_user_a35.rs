//! `ask_user` leftovers (issue 35 §2 "The model can ask"): the tool is offered only where
//! the tool list allows it (`--no-tools` offers nothing), several questions over ACP, a
//! sub-agent's question answered through its parent, the terminal told when a question
//! opens while the user is away — and the start-up notice when loopback listeners cannot be
//! given to sandboxed commands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::env::{Env, env};
use support::process::run;
use support::server::{FakeServer, Reply};

/// The question dialog's last line: once it is on the screen, the whole dialog is (a
/// question's text alone may be the transcript's line for the call, drawn before the dialog).
const DIALOG_SHOWN: &str = "esc declines to answer";

/// The tools a request offers the model, by name.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The tools the model was offered by a run of `agent ARGS` that succeeds.
async fn offered_by(env: &Env, server: &FakeServer, args: &[&str]) -> Vec<String> {
    let out = run(env.agent(server, args)).await;
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    offered(server.bodies().last().unwrap())
}

/// A user who says no tools means none: `ask_user` neither. A tool list offers it only
/// when it names it, on the command line as in `[tools] enabled`.
#[tokio::test]
async fn no_tools_offers_nothing_and_a_list_offers_ask_user_only_when_named() {
    let env = env();
    let server = FakeServer::start((0..5).map(|_| Reply::sse(chat::text("ok"))).collect()).await;
    assert_eq!(
        offered_by(&env, &server, &["--no-tools", "-p", "x"]).await,
        Vec::<String>::new()
    );
    assert_eq!(
        offered_by(&env, &server, &["--tools", "ls,read", "-p", "x"]).await,
        ["ls", "read"]
    );
    assert_eq!(
        offered_by(&env, &server, &["--tools", "read,ask_user", "-p", "x"]).await,
        ["read", "ask_user"]
    );
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tools]\nenabled = [\"ask_user\", \"ls\"]\n",
    )
    .unwrap();
    assert_eq!(
        offered_by(&env, &server, &["-p", "x"]).await,
        ["ls", "ask_user"]
    );
    // Without a list every tool is offered, `ask_user` among them.
    std::fs::write(env.home.path().join("config.toml"), "").unwrap();
    assert!(
        offered_by(&env, &server, &["-p", "x"])
            .await
            .contains(&"ask_user".to_string())
    );
    // A misspelt list names `ask_user` among the tools it may hold.
    let out = run(env.agent(&server, &["--tools", "read,ask", "-p", "x"])).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("ask_user"), "{}", out.stderr);
}

/// The child's question: `ask_user` with one single-choice question.
fn child_asks() -> Reply {
    Reply::sse(chat::tool_call(
        "cq1",
        "ask_user",
        json!({"questions": [{
            "id": "db", "header": "Database", "question": "Which database should the child use?",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]
        }]}),
    ))
}

/// A parent that delegates once (call `t1`) and a child that asks, then ends with what it
/// was told.
async fn delegating_to_a_child_that_asks() -> FakeServer {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "t1",
            "task",
            json!({"description": "set up the store", "prompt": "CHILD: pick a database"}),
        )),
        Reply::sse(chat::text("Parent done.")),
    ])
    .await;
    server.route(
        "CHILD",
        vec![child_asks(), Reply::sse(chat::text("Child done."))],
    );
    server
}

/// The requests the child made (its first user message is its task), as text.
fn child_requests(server: &FakeServer) -> Vec<String> {
    server
        .bodies()
        .iter()
        .filter(|body| {
            body["messages"]
                .as_array()
                .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
                .is_some_and(|first| first["content"] == "CHILD: pick a database")
        })
        .map(Value::to_string)
        .collect()
}

/// Answer the child's question (`cq1`, asked by `agent_id`) with SQLite over RPC: the
/// answer is taken, the run completes, and the child's next request carries the answer.
async fn answer_sqlite_and_finish(
    mut rpc: support::process::Rpc,
    server: &FakeServer,
    agent_id: &str,
) {
    rpc.send(
        json!({"id": "a", "type": "answer_question", "toolCallId": "cq1",
                    "agentId": agent_id, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
    )
    .await;
    let answered = rpc.response("a").await;
    assert_eq!(answered["success"], true, "{answered}");
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let child = child_requests(server);
    assert_eq!(child.len(), 2, "{child:?}");
    assert!(child[1].contains("Database: SQLite"), "{}", child[1]);
    assert_eq!(rpc.exit_code().await, 0);
}

/// A sub-agent's question reaches an RPC client relayed, naming the child (`agentId`,
/// `agentName`); the answer given with that `agentId` is the child's tool result, and the
/// parent's run goes on to its end.
#[tokio::test]
async fn a_sub_agents_question_reaches_rpc_named_and_the_answer_reaches_the_child() {
    let env = env();
    let server = delegating_to_a_child_that_asks().await;
    let mut rpc = support::process::Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    let question = rpc
        .until(|l| l["type"] == "user_question")
        .await
        .pop()
        .unwrap();
    assert_eq!(question["toolCallId"], "cq1", "{question}");
    assert_eq!(question["agentName"], "general", "{question}");
    let agent_id = question["agentId"].as_str().unwrap().to_string();
    assert!(!agent_id.is_empty(), "{question}");
    assert_eq!(
        question["questions"][0]["question"],
        "Which database should the child use?"
    );
    answer_sqlite_and_finish(rpc, &server, &agent_id).await;
}

/// A child's own child asks (`[agents] max_depth = 2`): the question reaches RPC naming
/// the grandchild by its path of ids (`a1/a1`), not the child that relayed it, and the
/// answer given with that path is the grandchild's tool result.
#[tokio::test]
async fn a_grandchilds_question_names_it_and_the_answer_reaches_it() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[agents]\nmax_depth = 2\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "t1",
            "task",
            json!({"description": "plan the store", "prompt": "MIDDLE: delegate"}),
        )),
        Reply::sse(chat::text("Parent done.")),
    ])
    .await;
    server.route(
        "MIDDLE",
        vec![
            Reply::sse(chat::tool_call(
                "t2",
                "task",
                json!({"description": "set up the store", "prompt": "CHILD: pick a database"}),
            )),
            Reply::sse(chat::text("Middle done.")),
        ],
    );
    server.route(
        "CHILD",
        vec![child_asks(), Reply::sse(chat::text("Child done."))],
    );
    let mut rpc = support::process::Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "user_question").await;
    let question = lines.last().unwrap().clone();
    // The ids from the wrapped events: the middle agent's, and its own child's inside.
    let wrapped = lines
        .iter()
        .find(|l| l["type"] == "subagent_event" && l["event"]["type"] == "subagent_event")
        .unwrap();
    // Each agent numbers its own children, so the question names the path down to it.
    let grandchild = format!(
        "{}/{}",
        wrapped["agentId"].as_str().unwrap(),
        wrapped["event"]["agentId"].as_str().unwrap()
    );
    assert_eq!(question["toolCallId"], "cq1", "{question}");
    assert_eq!(question["agentId"], grandchild.as_str(), "{question}");
    assert_eq!(question["agentName"], "general", "{question}");
    answer_sqlite_and_finish(rpc, &server, &grandchild).await;
}

/// In the terminal the child's question opens the dialog, titled with the child; the
/// option picked is the child's tool result.
#[tokio::test]
async fn tui_a_sub_agents_question_names_the_child_and_the_answer_reaches_it() {
    let env = env();
    let server = delegating_to_a_child_that_asks().await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate");
    tui.enter();
    tui.wait_for_text("Which database should the child use?")
        .await;
    // The question shows in the transcript (the call's line) before the dialog is drawn:
    // the dialog's last line says it is there.
    let screen = tui.wait_for_text(DIALOG_SHOWN).await;
    assert!(screen.contains("Sub-agent `general` ("), "{screen}");
    assert!(screen.contains("2. SQLite"), "{screen}");
    // The child's line says what it waits for.
    tui.wait_for_text("waiting for your answer").await;
    tui.send(b"2");
    tui.wait_for_text("Parent done.").await;
    let child = child_requests(&server);
    assert!(
        child.last().unwrap().contains("Database: SQLite"),
        "{child:?}"
    );
    tui.quit().await;
}

/// While the terminal is not focused, a question that opens is told as an approval is
/// (`[tui] notify`, here OSC 9), with the question.
#[tokio::test]
async fn tui_a_question_notifies_an_unfocused_terminal() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tui]\nnotify = \"osc9\"\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [{"question": "Which database should it use?",
                                  "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}),
        )),
        Reply::sse(chat::text("Going with it.")),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    tui.wait_for_text("Ask anything").await;
    tui.send(b"\x1b[O");
    tui.type_text("set it up");
    tui.enter();
    tui.wait_for_text("Which database should it use?").await;
    tui.wait_for_text(DIALOG_SHOWN).await;
    tui.wait_for("the question's notification", |_| {
        tui.wrote(b"\x1b]9;agent asks: Which database should it use?\x07")
    })
    .await;
    tui.send(b"\x1b[I");
    tui.send(b"1");
    tui.wait_for_text("Going with it.").await;
    tui.quit().await;
}

/// Every text of the requests the server got, joined.
fn sent(server: &FakeServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// ACP: several single-choice questions are asked one after the other, each a permission
/// request titled with its question; a multi-select and a free question are not shown, and
/// the model is told this client cannot answer that kind of question — beside the answers.
#[tokio::test]
async fn acp_asks_each_single_choice_question_in_turn_and_says_what_it_cannot_ask() {
    use support::acp::{Acp, choose};
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [
                {"id": "db", "header": "Database", "question": "Which database?",
                 "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"id": "tests", "header": "Tests", "question": "Which tests?", "multiSelect": true,
                 "options": [{"label": "unit"}, {"label": "e2e"}]},
                {"id": "license", "header": "License", "question": "Which license?",
                 "options": [{"label": "MIT"}, {"label": "Apache-2.0"}]},
                {"id": "name", "question": "What should it be called?"}
            ]}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "set it up");
    let (_, first, responder) = acp.permission().await;
    assert_eq!(first.tool_call.tool_call_id.to_string(), "q1");
    assert_eq!(
        first.tool_call.fields.title.as_deref(),
        Some("Which database? (1 of 4)")
    );
    let names: Vec<String> = first.options.iter().map(|o| o.name.clone()).collect();
    assert_eq!(names[..2], ["Postgres", "SQLite"], "{names:?}");
    choose(responder, &first.options[1].option_id.to_string());
    let (_, second, responder) = acp.permission().await;
    assert_eq!(second.tool_call.tool_call_id.to_string(), "q1");
    assert_eq!(
        second.tool_call.fields.title.as_deref(),
        Some("Which license? (3 of 4)")
    );
    choose(responder, &second.options[0].option_id.to_string());
    answer.await.unwrap().unwrap();
    let result = sent(&server);
    for line in [
        "Database: SQLite",
        "Tests: (no answer)",
        "License: MIT",
        "name: (no answer)",
        "cannot answer that kind of question",
        "`Tests` (several of its options may be chosen)",
        "`name` (it wants an answer in the user's own words)",
    ] {
        assert!(result.contains(line), "{line}: {result}");
    }
    assert_eq!(acp.exit_code().await, 0);
}

/// ACP: a question with nothing to choose from is not sent to the editor at all; the model
/// hears at once that this client cannot answer it, and goes on.
#[tokio::test]
async fn acp_a_free_question_is_answered_that_the_client_cannot_ask_it() {
    use support::acp::Acp;
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [{"id": "name", "question": "What should it be called?"}]}),
        )),
        Reply::sse(chat::text("I named it myself.")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "set it up");
    // No permission request comes (`until` fails the test on one) before the model goes on.
    acp.until(|update| {
        update["sessionUpdate"] == "agent_message_chunk"
            && update["content"]["text"]
                .as_str()
                .is_some_and(|text| text.contains("myself"))
    })
    .await;
    answer.await.unwrap().unwrap();
    let result = sent(&server);
    assert!(result.contains("name: (no answer)"), "{result}");
    assert!(
        result.contains("cannot answer that kind of question"),
        "{result}"
    );
    assert!(!result.contains("chose not to answer"), "{result}");
    assert_eq!(acp.exit_code().await, 0);
}

/// The `notify` command hears of a question as of an approval (`question-asked`, with the
/// questions), in every front end that can answer — here RPC.
#[tokio::test]
async fn the_notify_command_hears_when_the_model_asks() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [{"question": "Which database should it use?"}]}),
        )),
        Reply::sse(chat::text("fine")),
    ])
    .await;
    let log = env.cwd.path().join("notify.log");
    let config = format!(
        "provider = \"local\"\nmodel = \"test-model\"\nnotify = ['/bin/sh', '-c', 'printf \"%s\\n\" \"$1\" >> \"$0\"', '{}']\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
        log.display(),
        server.v1()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "rpc"]);
    let mut rpc = support::process::Rpc::spawn(cmd);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "set it up"}))
        .await;
    rpc.until(|l| l["type"] == "user_question").await;
    // The command runs on its own: wait (generously) for its line.
    let mut asked = Value::Null;
    for _ in 0..12_000 {
        let written = std::fs::read_to_string(&log).unwrap_or_default();
        // A whole line: the command has finished writing it.
        if let Some((line, _)) = written.split_once('\n') {
            asked = serde_json::from_str(line).unwrap();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(asked["type"], "question-asked", "{asked}");
    assert_eq!(asked["tool-call-id"], "q1");
    assert_eq!(asked["questions"], json!(["Which database should it use?"]));
    rpc.send(json!({"id": "d", "type": "answer_question", "toolCallId": "q1", "declined": true}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(rpc.exit_code().await, 0);
}

/// A question has no time limit in the terminal; the user ends it: esc declines (the model
/// is told so and goes on), ctrl+c stops the run (the call ends `Cancelled`, nothing more
/// is asked of the model).
#[tokio::test]
async fn tui_esc_declines_an_open_question_and_ctrl_c_stops_the_run() {
    let env = env();
    let asks = |id: &str, question: &str| {
        Reply::sse(chat::tool_call(
            id,
            "ask_user",
            json!({"questions": [{"question": question,
                                  "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}),
        ))
    };
    let server = FakeServer::start(vec![
        asks("q1", "Which database first?"),
        Reply::sse(chat::text("Deciding myself.")),
        asks("q2", "Which database second?"),
        Reply::sse(chat::text("never sent")),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("one");
    tui.enter();
    tui.wait_for_text("Which database first?").await;
    tui.wait_for_text(DIALOG_SHOWN).await;
    tui.send(b"\x1b");
    tui.wait_for_text("Deciding myself.").await;
    tui.wait_until_idle().await;
    assert!(
        sent(&server).contains("The user chose not to answer"),
        "{}",
        sent(&server)
    );
    tui.type_text("two");
    tui.enter();
    tui.wait_for_text("Which database second?").await;
    tui.wait_for_text(DIALOG_SHOWN).await;
    tui.send(b"\x03");
    tui.wait_for("the dialog to close and the run to stop", |screen| {
        !screen.contains(DIALOG_SHOWN) && !screen.contains("esc to interrupt")
    })
    .await;
    assert_eq!(server.requests().len(), 3, "no request after the stop");
    tui.quit().await;
}

/// The line of the `sh -c` that makes this kernel refuse new network namespaces to the
/// agent it then starts (`"$0" "$@"`): inside a user namespace of its own, whose limit of
/// network namespaces is set to 0 — a real refusal (`ENOSPC`), the way a kernel without
/// them refuses, that leaves the rest of the sandbox (Landlock, the mount namespace,
/// seccomp) working.
const NO_NET_NAMESPACES: &str = "echo 0 > /proc/sys/user/max_net_namespaces && exec \"$0\" \"$@\"";

/// Whether this machine can run a program where network namespaces are refused (a user
/// namespace of our own, in which making one then fails).
async fn can_refuse_net_namespaces() -> bool {
    let probe = tokio::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", NO_NET_NAMESPACES])
        .args(["sh", "-c", "! unshare --net true 2>/dev/null"])
        .output()
        .await;
    match probe {
        Ok(output) if output.status.success() => true,
        other => {
            support::skip::skip(&format!(
                "cannot refuse network namespaces here (unshare --user): {other:?}"
            ));
            false
        }
    }
}

/// `cmd` (the agent) started where network namespaces are refused, with the same
/// arguments, environment and directory.
fn without_net_namespaces(cmd: &tokio::process::Command) -> tokio::process::Command {
    let std = cmd.as_std();
    let mut wrapped = tokio::process::Command::new("unshare");
    wrapped
        .args(["--user", "--map-root-user", "sh", "-c", NO_NET_NAMESPACES])
        .arg(std.get_program())
        .args(std.get_args());
    for (name, value) in std.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    if let Some(dir) = std.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    wrapped
}

/// `[sandbox] allow_local_binding` is on (the default), but the kernel will not make the
/// session's network namespace: the user hears it once at start — an `agent:` line in
/// `-p` — and not where the namespace can be made. The sandbox itself stays enforced.
#[tokio::test]
async fn a_refused_loopback_namespace_is_told_once_at_start() {
    if !can_refuse_net_namespaces().await {
        return;
    }
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
    ])
    .await;
    let args = ["--sandbox", "workspace-write", "--no-session", "-p", "hi"];
    let refused = run(without_net_namespaces(&env.agent(&server, &args))).await;
    assert_eq!(refused.code, 0, "{}", refused.stderr);
    assert_eq!(refused.stdout.trim(), "one");
    let notices: Vec<&str> = refused
        .stderr
        .lines()
        .filter(|l| l.contains("loopback listeners are unavailable"))
        .collect();
    assert_eq!(notices.len(), 1, "{}", refused.stderr);
    assert!(notices[0].starts_with("agent: "), "{}", notices[0]);
    assert!(
        notices[0].contains("cannot make a network namespace"),
        "{}",
        notices[0]
    );
    assert!(notices[0].contains("allow_local_binding"), "{}", notices[0]);
    assert!(
        !refused.stderr.contains("sandbox is unavailable"),
        "{}",
        refused.stderr
    );
    // Where the namespace can be made, nothing is said.
    let made = run(env.agent(&server, &args)).await;
    assert_eq!(made.code, 0, "{}", made.stderr);
    assert!(
        !made.stderr.contains("loopback listeners"),
        "{}",
        made.stderr
    );
}

/// Over RPC `get_permissions` says `localBinding: "unavailable"` from the start, before any
/// command tried the namespace (the sandbox itself enforced).
#[tokio::test]
async fn a_refused_loopback_namespace_is_unavailable_from_the_start_over_rpc() {
    if !can_refuse_net_namespaces().await {
        return;
    }
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let cmd = env.agent(
        &server,
        &[
            "--mode",
            "rpc",
            "--sandbox",
            "workspace-write",
            "--no-session",
        ],
    );
    let mut rpc = support::process::Rpc::spawn(without_net_namespaces(&cmd));
    rpc.send(json!({"id": "p", "type": "get_permissions"}))
        .await;
    let permissions = rpc.response("p").await;
    let sandbox = &permissions["data"]["sandbox"];
    assert_eq!(sandbox["status"], "enforced", "{permissions}");
    assert_eq!(sandbox["localBinding"], "unavailable", "{permissions}");
    assert_eq!(rpc.exit_code().await, 0);
}

/// ACP: a sub-agent's question goes to the editor as a permission request saying which
/// child asks; the option chosen is the child's tool result.
#[tokio::test]
async fn acp_a_sub_agents_question_names_the_child_and_the_answer_reaches_it() {
    use support::acp::{Acp, choose};
    let env = env();
    let server = delegating_to_a_child_that_asks().await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "delegate");
    let (_, request, responder) = acp.permission().await;
    let shown = serde_json::to_string(&request.tool_call).unwrap();
    assert!(
        shown.contains("Sub-agent `general` (")
            && shown.contains("Which database should the child use?"),
        "{shown}"
    );
    choose(responder, &request.options[1].option_id.to_string());
    answer.await.unwrap().unwrap();
    let child = child_requests(&server);
    assert!(
        child.last().unwrap().contains("Database: SQLite"),
        "{child:?}"
    );
    assert_eq!(acp.exit_code().await, 0);
}

/// Plan mode's instructions send the model to `ask_user` only where it is offered.
#[tokio::test]
async fn plan_mode_names_ask_user_only_where_it_is_offered() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("1. a plan")),
        Reply::sse(chat::text("1. a plan")),
    ])
    .await;
    let system = |server: &FakeServer| {
        server.bodies().last().unwrap()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let plan = ["--permission-mode", "plan", "--no-session"];
    let all = run(env.agent(&server, &[&plan[..], &["-p", "x"]].concat())).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert!(system(&server).contains("with the ask_user tool"));
    let listed = run(env.agent(
        &server,
        &[&plan[..], &["--tools", "read,grep", "-p", "x"]].concat(),
    ))
    .await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let prompt = system(&server);
    assert!(prompt.contains("# Plan mode"), "{prompt}");
    assert!(!prompt.contains("ask_user"), "{prompt}");
}

/// In the terminal the refused loopback namespace is a notice line at start.
#[tokio::test]
async fn tui_a_refused_loopback_namespace_is_a_start_up_notice() {
    if !can_refuse_net_namespaces().await {
        return;
    }
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start_in(
        &server,
        &["--sandbox", "workspace-write"],
        &[],
        support::pty::Terminal {
            wrapper: Some(&[
                "unshare",
                "--user",
                "--map-root-user",
                "sh",
                "-c",
                NO_NET_NAMESPACES,
            ]),
            ..support::pty::Terminal::default()
        },
    );
    let screen = tui
        .wait_for_text("loopback listeners are unavailable")
        .await;
    assert!(screen.contains("Ask anything"), "{screen}");
    assert_eq!(
        screen.matches("loopback listeners are unavailable").count(),
        1,
        "{screen}"
    );
    tui.quit().await;
}
