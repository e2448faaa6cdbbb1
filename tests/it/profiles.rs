//! `[profiles.NAME]` through the public CLI: `--profile` chooses provider, model, account,
//! permission mode, sandbox and MCP servers together; RPC `set_profile` switches between
//! runs (the next request goes out with the other profile's model and the other account's
//! key); two accounts of one provider sit beside the provider's default credential stored
//! before accounts existed; unknown profiles and accounts are said, not ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support::chat;
use crate::support::env::{Env, env};
use crate::support::mcp_fixture;
use crate::support::process::{Rpc, command, run};
use crate::support::server::{FakeServer, Reply};
use serde_json::{Value, json};

const WORK_KEY: &str = "sk-work-account-0123456789";
const HOME_KEY: &str = "sk-home-account-0123456789";
const DEFAULT_KEY: &str = "sk-default-account-0123456789";

/// A config with provider `acme` at `server` and two profiles on two of its accounts, and
/// an `auth.json` with both accounts' keys and the provider's default key, as `agent
/// login` wrote it before accounts existed (`provider/acme`).
fn setup(e: &Env, server: &FakeServer, extra: &str) {
    let config = format!(
        r#"[providers.acme]
api = "openai-chat"
base_url = "{}"

[profiles.work]
provider = "acme"
model = "work-model"
account = "work"
permission_mode = "read-only"
sandbox = "read-only"

[profiles.home]
provider = "acme"
model = "home-model"
account = "home"
permission_mode = "auto"
sandbox = "off"
{extra}"#,
        server.v1()
    );
    std::fs::write(e.home.path().join("config.toml"), config).unwrap();
    let key = |key: &str| json!({"type": "api_key", "key": key});
    let file = json!({"credentials": {
        "provider/acme": key(DEFAULT_KEY),
        "provider/acme@work": key(WORK_KEY),
        "provider/acme@home": key(HOME_KEY),
    }});
    std::fs::write(e.home.path().join("auth.json"), file.to_string()).unwrap();
}

fn agent(e: &Env, args: &[&str]) -> tokio::process::Command {
    let mut cmd = command(e.home.path(), e.cwd.path());
    cmd.env("AGENT_CREDENTIAL_STORE", "file").args(args);
    cmd
}

async fn ok(rpc: &mut Rpc, id: &str, command: Value) -> Value {
    let mut command = command;
    command["id"] = json!(id);
    rpc.send(command).await;
    let response = rpc.response(id).await;
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

#[tokio::test]
async fn set_profile_switches_model_account_and_modes_between_runs() {
    let e = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
        Reply::sse(chat::text("three")),
    ])
    .await;
    setup(&e, &server, "");
    let mut rpc = Rpc::spawn(agent(&e, &["--profile", "work", "--mode", "rpc"]));

    let state = ok(&mut rpc, "s1", json!({"type": "get_state"})).await;
    assert_eq!(state["profile"], "work");
    assert_eq!(state["profiles"], json!(["home", "work"]));
    assert_eq!(state["provider"], "acme");
    assert_eq!(state["model"], "work-model");
    assert_eq!(state["permissionMode"], "read-only");
    let permissions = ok(&mut rpc, "p1", json!({"type": "get_permissions"})).await;
    assert_eq!(permissions["sandbox"]["mode"], "read-only", "{permissions}");

    ok(&mut rpc, "r1", json!({"type": "prompt", "message": "one"})).await;
    rpc.until(|v| v["type"] == "agent_end").await;

    let switched = ok(
        &mut rpc,
        "x1",
        json!({"type": "set_profile", "name": "home"}),
    )
    .await;
    assert_eq!(switched["name"], "home");
    assert_eq!(switched["account"], "home");
    assert_eq!(switched["model"]["id"], "home-model");
    assert_eq!(switched["permissionMode"], "auto");
    assert_eq!(switched["sandbox"], "off");
    let state = ok(&mut rpc, "s2", json!({"type": "get_state"})).await;
    assert_eq!(state["profile"], "home");
    assert_eq!(state["model"], "home-model");
    assert_eq!(state["permissionMode"], "auto");
    let permissions = ok(&mut rpc, "p2", json!({"type": "get_permissions"})).await;
    assert_eq!(permissions["sandbox"]["mode"], "off", "{permissions}");

    ok(&mut rpc, "r2", json!({"type": "prompt", "message": "two"})).await;
    let events = rpc.until(|v| v["type"] == "agent_end").await;
    assert!(
        events
            .iter()
            .all(|v| !v.to_string().contains(HOME_KEY) && !v.to_string().contains(WORK_KEY)),
        "no key in an event"
    );

    rpc.send(json!({"id": "x2", "type": "set_profile", "name": "nope"}))
        .await;
    let refused = rpc.response("x2").await;
    assert_eq!(refused["success"], false);
    assert_eq!(
        refused["error"],
        "unknown profile `nope` (known: home, work)"
    );

    // Back to the first profile: its account again.
    ok(
        &mut rpc,
        "x3",
        json!({"type": "set_profile", "name": "work"}),
    )
    .await;
    ok(
        &mut rpc,
        "r3",
        json!({"type": "prompt", "message": "three"}),
    )
    .await;
    rpc.until(|v| v["type"] == "agent_end").await;

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent: Vec<(Option<&str>, Value)> = requests
        .iter()
        .map(|r| (r.header("authorization"), r.body["model"].clone()))
        .collect();
    let work = format!("Bearer {WORK_KEY}");
    let home = format!("Bearer {HOME_KEY}");
    assert_eq!(
        sent,
        [
            (Some(work.as_str()), json!("work-model")),
            (Some(home.as_str()), json!("home-model")),
            (Some(work.as_str()), json!("work-model")),
        ]
    );
}

#[tokio::test]
async fn the_config_changed_event_names_the_profile() {
    let e = env();
    let server = FakeServer::start(vec![]).await;
    setup(&e, &server, "");
    let mut rpc = Rpc::spawn(agent(&e, &["--profile", "work", "--mode", "rpc"]));
    rpc.send(json!({"id": "x1", "type": "set_profile", "name": "home"}))
        .await;
    let events = rpc.until(|v| v["type"] == "config_changed").await;
    let changed = events.last().unwrap();
    assert_eq!(changed["profile"], "home", "{changed}");
    assert_eq!(changed["model"], "home-model");
    assert_eq!(changed["permissionMode"], "auto");
}

#[tokio::test]
async fn without_a_profile_the_default_account_is_used_and_flags_beat_a_profile() {
    let e = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("a")),
        Reply::sse(chat::text("b")),
    ])
    .await;
    setup(&e, &server, "");
    // No profile: the provider's default credential, stored before accounts existed.
    let out = run(agent(
        &e,
        &["--provider", "acme", "--model", "m", "-p", "hi"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A flag beats the profile's model; the profile's account stays with its provider.
    let out = run(agent(
        &e,
        &["--profile", "home", "--model", "flag-model", "-p", "hi"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {DEFAULT_KEY}").as_str())
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {HOME_KEY}").as_str())
    );
    assert_eq!(requests[1].body["model"], "flag-model");
}

#[tokio::test]
async fn unknown_profiles_and_accounts_not_signed_in_are_said() {
    let e = env();
    let server = FakeServer::start(vec![]).await;
    setup(
        &e,
        &server,
        "\n[profiles.new]\nprovider = \"acme\"\nmodel = \"m\"\naccount = \"nobody\"\n",
    );
    let out = run(agent(&e, &["--profile", "nope", "-p", "hi"])).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--profile: unknown profile `nope` (known: home, new, work)"),
        "{}",
        out.stderr
    );
    // An account nobody signed in to is not replaced by the provider's default key.
    let out = run(agent(&e, &["--profile", "new", "-p", "hi"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "account `nobody` of provider `acme` is not signed in: run `agent login --provider acme --account nobody`"
        ),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // A profile naming an MCP server that is not configured is a config error.
    std::fs::write(
        e.home.path().join("config.toml"),
        "[profiles.x]\nmcp_servers = [\"files\"]\n",
    )
    .unwrap();
    let out = run(agent(&e, &["-p", "hi"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("`profiles.x.mcp_servers[0]`: no MCP server `files` in [mcp_servers]"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_profile_offers_only_its_mcp_servers() {
    let e = env();
    let marks = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("a")),
        Reply::sse(chat::text("b")),
    ])
    .await;
    let tables = format!(
        "\n{}\n{}",
        mcp_fixture::config_table("one", "stdio", marks.path()),
        mcp_fixture::config_table("two", "stdio", marks.path())
    );
    setup(&e, &server, &tables);
    // `work` uses server `one` only; `home` names none, so it uses both.
    let config = std::fs::read_to_string(e.home.path().join("config.toml")).unwrap();
    let config = config.replace(
        "sandbox = \"read-only\"\n",
        "sandbox = \"read-only\"\nmcp_servers = [\"one\"]\n",
    );
    std::fs::write(e.home.path().join("config.toml"), config).unwrap();
    let mut rpc = Rpc::spawn(agent(&e, &["--profile", "work", "--mode", "rpc"]));
    let state = ok(&mut rpc, "s1", json!({"type": "get_state"})).await;
    let names = |state: &Value| -> Vec<String> {
        state["mcpServers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&state), ["one"]);
    ok(&mut rpc, "r1", json!({"type": "prompt", "message": "a"})).await;
    rpc.until(|v| v["type"] == "agent_end").await;
    ok(
        &mut rpc,
        "x1",
        json!({"type": "set_profile", "name": "home"}),
    )
    .await;
    let state = ok(&mut rpc, "s2", json!({"type": "get_state"})).await;
    assert_eq!(names(&state), ["one", "two"]);
    ok(&mut rpc, "r2", json!({"type": "prompt", "message": "b"})).await;
    rpc.until(|v| v["type"] == "agent_end").await;

    let tools = |i: usize| -> Vec<String> {
        server.bodies()[i]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .filter(|n| n.starts_with("mcp__"))
            .map(|n| n.split("__").nth(1).unwrap().to_string())
            .collect()
    };
    let mut first = tools(0);
    first.dedup();
    assert_eq!(first, ["one"]);
    let mut second = tools(1);
    second.dedup();
    assert_eq!(second, ["one", "two"]);
}

#[tokio::test]
async fn login_status_and_logout_of_a_named_account() {
    let e = env();
    let server = FakeServer::start(vec![]).await;
    setup(&e, &server, "");
    let mut login = agent(&e, &["login", "--provider", "acme", "--account", "spare"]);
    login.stdin(std::process::Stdio::piped());
    let mut child = login.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"sk-spare-account-0123456789\n")
        .await
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("Signed in to `acme` (account `spare`)"),
        "{stdout}"
    );

    let status = run(agent(&e, &["auth", "status"])).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    for line in [
        "provider `acme`: API key",
        "provider `acme` account `home`: API key",
        "provider `acme` account `spare`: API key",
        "provider `acme` account `work`: API key",
    ] {
        assert!(status.stdout.contains(line), "{line}: {}", status.stdout);
    }
    assert!(!status.stdout.contains("sk-spare"));

    let bad = run(agent(
        &e,
        &["login", "--provider", "acme", "--account", "a/b"],
    ))
    .await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("is not an account name"),
        "{}",
        bad.stderr
    );

    let out = run(agent(
        &e,
        &["logout", "--provider", "acme", "--account", "spare"],
    ))
    .await;
    assert!(
        out.stdout
            .contains("Signed out of `acme` (account `spare`)."),
        "{}",
        out.stdout
    );
    // The other accounts and the default credential are still there.
    let file = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    assert!(!file.contains("sk-spare"));
    for key in [WORK_KEY, HOME_KEY, DEFAULT_KEY] {
        assert!(file.contains(key));
    }
}

/// The interface: the profile in the status line, `/profile` switching it (the next
/// request goes with the other account), `/login` reading a key that is never drawn nor
/// written anywhere but the store, `/logout` forgetting it.
#[tokio::test]
async fn the_interface_switches_profiles_and_signs_in_with_a_hidden_key() {
    const TYPED: &str = "sk-typed-in-the-tui-0123456789";
    let e = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("answered at home"))]).await;
    setup(&e, &server, "");
    let tui = crate::support::pty::Tui::spawn_sized(
        &["--profile", "work"],
        e.home.path(),
        e.cwd.path(),
        crate::support::pty::ROWS,
        crate::support::pty::COLS,
        &[("AGENT_CREDENTIAL_STORE", "file")],
    );
    tui.wait_for_text("profile work").await;

    tui.type_text("/profile home");
    tui.enter();
    tui.wait_for_text("Profile: home").await;
    tui.wait_for_text("profile home").await;
    tui.type_text("hello");
    tui.enter();
    tui.wait_for_text("answered at home").await;
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {HOME_KEY}").as_str())
    );

    tui.type_text("/login acme --account spare");
    tui.enter();
    tui.wait_for_text("it is not shown").await;
    tui.wait_for_text("API key for `acme` (account `spare`): hidden")
        .await;
    tui.type_text(TYPED);
    // Typed, not shown: neither on the screen nor in the composer.
    assert!(
        !tui.transcript().contains("sk-typed"),
        "{}",
        tui.transcript()
    );
    tui.enter();
    tui.wait_for_text("Signed in to `acme` (account `spare`)")
        .await;
    assert!(!tui.wrote(TYPED.as_bytes()), "the key reached the terminal");
    let file = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    let stored: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(
        stored["credentials"]["provider/acme@spare"]["key"], TYPED,
        "{file}"
    );

    // Esc drops a key being typed.
    tui.type_text("/login acme --account other");
    tui.enter();
    tui.wait_for_text("(account `other`): hidden").await;
    tui.type_text("sk-dropped-0123456789");
    tui.send(b"\x1b");
    tui.wait_for_text("Nothing was stored.").await;

    tui.type_text("/logout acme --account spare");
    tui.enter();
    tui.wait_for_text("Signed out of `acme` (account `spare`).")
        .await;
    let file = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    assert!(
        !file.contains(TYPED) && !file.contains("sk-dropped"),
        "{file}"
    );
    for session in e.session_files() {
        let text = std::fs::read_to_string(session).unwrap();
        assert!(!text.contains(TYPED));
    }
}
