//! MCP servers through the real binary: `agent mcp add|list|remove` editing config.toml,
//! `-p` using a server's tools and saying once that another did not start, RPC
//! `get_state.mcpServers`, the TUI's status line and `/mcp`, and stdio servers ending with the
//! agent — also when the agent is killed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;
use crate::support::mcp_fixture;

use serde_json::json;
use support::chat;
use support::env::env;
use support::harness::{wait_for_pid, wait_until_dead};
use support::process::{Rpc, command, run};
use support::server::{FakeServer, Reply};

#[tokio::test]
async fn mcp_subcommands_edit_the_config_and_keep_its_comments() {
    let env = env();
    let config = env.home.path().join("config.toml");
    std::fs::write(&config, "# my settings\nmodel = \"gpt-4.1\" # the best\n").unwrap();
    let agent = |args: &[&str]| {
        let mut cmd = command(env.home.path(), env.cwd.path());
        cmd.args(args);
        run(cmd)
    };
    let out = agent(&[
        "mcp", "add", "files", "--env", "A=1", "--", "npx", "-y", "server",
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = agent(&["mcp", "add", "docs", "--url", "http://127.0.0.1:3001/mcp"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = agent(&["mcp", "add", "docs", "--url", "http://127.0.0.1:3001/mcp"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("configured already"), "{}", out.stderr);
    let out = agent(&["mcp", "list"]).await;
    assert_eq!(
        out.stdout,
        "docs  http   http://127.0.0.1:3001/mcp\nfiles  stdio  npx -y server\n"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"gpt-4.1\" # the best\n"),
        "{text}"
    );
    assert!(text.contains("[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\nenv = { A = \"1\" }\n"), "{text}");
    let out = agent(&["mcp", "remove", "files"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = agent(&["mcp", "remove", "docs"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# my settings\nmodel = \"gpt-4.1\" # the best\n"
    );
    // `--config` chooses another file, after the subcommand too.
    let other = env.home.path().join("other.toml");
    let other_arg = other.display().to_string();
    let out = agent(&[
        "mcp",
        "add",
        "x",
        "--url",
        "http://h/mcp",
        "--config",
        &other_arg,
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = agent(&["mcp", "list", "--config", &other_arg]).await;
    assert_eq!(out.stdout, "x  http   http://h/mcp\n");
    // A config that is a symlink stays one; the file it points to is edited.
    let real = env.home.path().join("dotfiles.toml");
    std::fs::write(&real, "# linked\n").unwrap();
    let link = env.home.path().join("linked.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let link_arg = link.display().to_string();
    let out = agent(&["mcp", "add", "y", "--config", &link_arg, "--", "srv"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "# linked\n[mcp_servers.y]\ncommand = \"srv\"\n"
    );
    let out = agent(&["mcp", "remove", "docs"]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no MCP server named `docs`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn print_mode_uses_mcp_tools_and_says_once_which_server_did_not_start() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "{}\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            mcp_fixture::config_table("fx", "stdio", marks.path())
        ),
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "mcp__fx__echo",
            json!({"text": "from -p"}),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "All done.\n");
    let notices: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("MCP server"))
        .collect();
    assert_eq!(notices.len(), 1, "{}", out.stderr);
    assert!(
        notices[0].starts_with(
            "agent: MCP server `broken` is not available: cannot run `/nonexistent/mcp-server`"
        ),
        "{}",
        notices[0]
    );
    let bodies = server.bodies();
    assert_eq!(bodies[1]["messages"][3]["content"], "echo: from -p");
    // The server ended with the agent.
    let pid = wait_for_pid(&marks.path().join("pid")).await;
    assert!(wait_until_dead(pid).await, "the server outlived the agent");
}

#[tokio::test]
async fn rpc_get_state_lists_the_servers() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "{}\n[mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
            mcp_fixture::config_table("fx", "stdio", marks.path())
        ),
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    let mut servers;
    let mut n = 0;
    loop {
        n += 1;
        let id = format!("s{n}");
        rpc.send(json!({"type": "get_state", "id": id})).await;
        servers = rpc.response(&id).await["data"]["mcpServers"].clone();
        if servers[0]["status"] != "starting" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(servers[0]["name"], "fx");
    assert_eq!(servers[0]["status"], "ready");
    assert_eq!(servers[0]["transport"], "stdio");
    let tools = servers[0]["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__fx__echo")), "{tools:?}");
    assert!(servers[0].get("error").is_none());
    assert_eq!(
        servers[1],
        json!({"name": "off", "status": "disabled", "transport": "stdio", "tools": []})
    );
    let pid = wait_for_pid(&marks.path().join("pid")).await;
    assert_eq!(rpc.exit_code().await, 0);
    assert!(wait_until_dead(pid).await, "the server outlived the agent");
}

#[tokio::test]
async fn a_killed_agent_takes_its_stdio_servers_with_it() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        mcp_fixture::config_table("fx", "stdio", marks.path()),
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    let pid = wait_for_pid(&marks.path().join("pid")).await;
    rpc.child.start_kill().unwrap();
    let _ = rpc.child.wait().await;
    assert!(
        wait_until_dead(pid).await,
        "the server outlived the killed agent"
    );
}

/// The interface starts its MCP servers once the prompt is on the screen, so they do not
/// compete with the first frame for the CPU: the log says the first frame was drawn before
/// it says a server starts.
#[tokio::test]
async fn the_interface_starts_mcp_servers_after_its_first_frame() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        mcp_fixture::config_table("fx", "stdio", marks.path()),
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let tui = env.start(&server, &[]);
    tui.wait_for_text("mcp 1/1").await;
    let log = std::fs::read_to_string(env.home.path().join("logs/agent.log")).unwrap();
    let drawn = log.find("interface ready: first frame drawn");
    let starting = log.find("starting MCP server");
    assert!(
        matches!((drawn, starting), (Some(d), Some(s)) if d < s),
        "{log}"
    );
}

#[tokio::test]
async fn the_interface_shows_mcp_status_and_lists_servers() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "{}\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            mcp_fixture::config_table("fx", "stdio", marks.path())
        ),
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("mcp 1/2").await;
    tui.wait_for_text("MCP server `broken` is not available")
        .await;
    tui.type_text("/mcp");
    tui.enter();
    let screen = tui.wait_for_text("fx ready · stdio").await;
    assert!(
        screen.contains("mcp__fx__echo — Echo text back"),
        "{screen}"
    );
    assert!(
        screen.contains("broken failed · stdio · 0 tools"),
        "{screen}"
    );
    assert!(
        screen.contains("cannot run `/nonexistent/mcp-server`"),
        "{screen}"
    );
    let pid = wait_for_pid(&marks.path().join("pid")).await;
    tui.type_text("/quit");
    tui.enter();
    assert_eq!(tui.exit_code().await, 0);
    assert!(wait_until_dead(pid).await, "the server outlived the agent");
}
