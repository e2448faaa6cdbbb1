//! `[sandbox] allow_local_binding`: a session's sandboxed commands share one network
//! namespace with only a loopback interface in it — a dev server one command starts is
//! reachable from the next, and nothing else is: not the host's own loopback services, not
//! the host's other addresses or any other host, not another session's servers, and no
//! netlink, packet or raw socket to change or sniff the namespace. Attacked with real
//! servers and clients (python, curl) below the real supervisor, as root and as an
//! unprivileged user (whose namespace sits in a user namespace of its own).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::sandbox::SandboxConfig;
use agent::tools::{Tool, ToolContext, ToolOutput};
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use support::sandbox::{User, blocked, config, context, give, sandbox, scratch, text};

const PYTHON: &str = "/usr/bin/python3";

/// Workspace-write, network off, loopback listeners allowed.
fn local_binding(on: bool) -> SandboxConfig {
    SandboxConfig {
        allow_local_binding: on,
        ..config(false)
    }
}

/// Whether the tests can run here: a python for the servers, curl for the clients, and a
/// kernel that lets this user make the namespace (checked by making one).
async fn can_run(user: User) -> bool {
    if !Path::new(PYTHON).exists() || !support::skip::on_path("curl") {
        support::skip::skip("needs /usr/bin/python3 and curl");
        return false;
    }
    let dir = scratch(user);
    let ctx = session(user, dir.path(), true);
    let probe = run(&ctx, "echo made", false).await;
    if !text(&probe).contains("made") {
        panic!(
            "{user:?}: a command with local binding did not run: {}",
            text(&probe)
        );
    }
    match ctx.session_net.state() {
        agent::tools::process::session_net::NetState::Made => true,
        other => {
            support::skip::skip(&format!("{user:?}: no session namespace here: {other:?}"));
            false
        }
    }
}

/// One session's tool context (its clones share the session's namespace).
fn session(user: User, cwd: &Path, allow: bool) -> ToolContext {
    context(user, cwd, sandbox(cwd, &local_binding(allow)))
}

async fn run(ctx: &ToolContext, command: &str, background: bool) -> ToolOutput {
    agent::tools::bash::BashTool
        .execute(
            json!({"command": command, "background": background, "timeout": 600}),
            ctx.clone(),
        )
        .await
}

/// A python web server serving `dir` on `address:port`, in the background.
fn server(address: &str, port: u16, dir: &str) -> String {
    format!("exec {PYTHON} -m http.server {port} --bind {address} -d {dir}")
}

/// A command that asks `url` until it answers (at most about two minutes: the server is
/// python starting on a loaded machine), then prints the answer.
fn fetch_when_up(url: &str) -> String {
    format!(
        "for i in $(seq 1200); do curl -sf --max-time 5 {url} && exit 0; sleep 0.1; done; \
         echo never answered; exit 1"
    )
}

/// A directory `served/` in `dir` holding `marker` with `text`.
fn serve_marker(dir: &Path, user: User, text: &str) {
    std::fs::create_dir_all(dir.join("served")).unwrap();
    std::fs::write(dir.join("served/marker"), text).unwrap();
    give(dir, user);
}

/// A TCP port no listener of this machine's namespace has right now.
fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// This machine's address on its default route, if it has one (a UDP `connect` picks it;
/// nothing is sent).
fn host_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let address = socket.local_addr().ok()?.ip();
    (!address.is_loopback() && !address.is_unspecified()).then_some(address)
}

/// Whether a listener saw a connection (it is non-blocking: a connection that came is
/// queued already).
fn was_reached(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

#[tokio::test]
async fn a_background_server_is_reachable_from_the_next_command() {
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        let dir = scratch(user);
        serve_marker(dir.path(), user, "served from the sandbox");
        let ctx = session(user, dir.path(), true);
        let started = run(&ctx, &server("127.0.0.1", 8000, "served"), true).await;
        assert!(!started.is_error, "{user:?}: {}", text(&started));
        let fetched = run(&ctx, &fetch_when_up("http://127.0.0.1:8000/marker"), false).await;
        assert!(
            text(&fetched).contains("served from the sandbox"),
            "{user:?}: {}",
            text(&fetched)
        );
        ctx.shells.kill_all().await;
    }
}

#[tokio::test]
async fn the_hosts_loopback_and_other_addresses_are_out_of_reach() {
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        // The user's own services: on the host's loopback, and on every address.
        let on_loopback = TcpListener::bind("127.0.0.1:0").unwrap();
        let on_all = TcpListener::bind("0.0.0.0:0").unwrap();
        let loopback_port = on_loopback.local_addr().unwrap().port();
        let all_port = on_all.local_addr().unwrap().port();
        let mut targets = vec![
            format!("127.0.0.1:{loopback_port}"),
            format!("127.0.0.1:{all_port}"),
        ];
        if let Some(address) = host_address() {
            targets.push(SocketAddr::new(address, all_port).to_string());
        }
        let dir = scratch(user);
        let ctx = session(user, dir.path(), true);
        for target in &targets {
            let tried = run(
                &ctx,
                &format!("curl -sS --max-time 10 http://{target}/; echo curl=$?"),
                false,
            )
            .await;
            let seen = text(&tried);
            assert!(
                !seen.contains("curl=0"),
                "{user:?} reached {target}: {seen}"
            );
        }
        assert!(
            !was_reached(&on_loopback),
            "{user:?}: the host's loopback was reached"
        );
        assert!(
            !was_reached(&on_all),
            "{user:?}: a host listener was reached"
        );
    }
}

#[tokio::test]
async fn a_server_on_every_address_stays_inside_the_namespace() {
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        let port = free_port();
        let dir = scratch(user);
        serve_marker(dir.path(), user, "inside");
        let ctx = session(user, dir.path(), true);
        run(&ctx, &server("0.0.0.0", port, "served"), true).await;
        // It listens (its own session reaches it)...
        let fetched = run(
            &ctx,
            &fetch_when_up(&format!("http://127.0.0.1:{port}/marker")),
            false,
        )
        .await;
        assert!(
            text(&fetched).contains("inside"),
            "{user:?}: {}",
            text(&fetched)
        );
        // ...and the host does not reach it, neither on its loopback nor its address (should
        // another process of this machine have taken the port meanwhile, it is not ours).
        let mut addresses = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
        addresses.extend(host_address());
        for address in addresses {
            if let Ok(mut stream) = TcpStream::connect(SocketAddr::new(address, port)) {
                use std::io::{Read, Write};
                stream
                    .set_read_timeout(Some(std::time::Duration::from_secs(30)))
                    .unwrap();
                let _ = stream.write_all(b"GET /marker HTTP/1.0\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                assert!(
                    !answer.contains("inside"),
                    "{user:?}: the host reaches the server on {address}"
                );
            }
        }
        ctx.shells.kill_all().await;
    }
}

#[tokio::test]
async fn a_host_address_cannot_be_bound() {
    let Some(address) = host_address() else {
        support::skip::skip("this machine has no address on a default route");
        return;
    };
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        let dir = scratch(user);
        let ctx = session(user, dir.path(), true);
        let command = format!(
            "{PYTHON} -c \"import socket; s = socket.socket(); s.bind(('{address}', 0)); print('bound')\""
        );
        let tried = run(&ctx, &command, false).await;
        let seen = text(&tried);
        assert!(!seen.contains("bound\n"), "{user:?}: {seen}");
        assert!(
            seen.contains("Cannot assign requested address"),
            "{user:?}: {seen}"
        );
    }
}

#[tokio::test]
async fn netlink_packet_and_raw_sockets_stay_refused() {
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        let dir = scratch(user);
        let ctx = session(user, dir.path(), true);
        for (family, kind) in [
            ("AF_NETLINK", "SOCK_RAW"),
            ("AF_PACKET", "SOCK_RAW"),
            ("AF_INET", "SOCK_RAW"),
        ] {
            let command = format!(
                "{PYTHON} -c \"import socket; socket.socket(socket.{family}, socket.{kind}, 1); print('made')\""
            );
            let tried = run(&ctx, &command, false).await;
            let seen = text(&tried);
            assert!(!seen.contains("made\n"), "{user:?}: {family}: {seen}");
            assert!(
                seen.contains("Operation not permitted"),
                "{user:?}: {family}: {seen}"
            );
        }
        // And the loopback's address cannot be changed (no netlink, no capability).
        let tried = run(&ctx, "ip addr add 10.9.9.9/24 dev lo; echo ip=$?", false).await;
        assert!(!text(&tried).contains("ip=0"), "{user:?}: {}", text(&tried));
    }
}

#[tokio::test]
async fn two_sessions_do_not_share_their_loopback() {
    for user in User::both() {
        if !can_run(user).await {
            continue;
        }
        let (one, two) = (scratch(user), scratch(user));
        serve_marker(one.path(), user, "session one");
        serve_marker(two.path(), user, "session two");
        let first = session(user, one.path(), true);
        let second = session(user, two.path(), true);
        // The same port in both: each is free in its own namespace.
        for ctx in [&first, &second] {
            let started = run(ctx, &server("127.0.0.1", 8000, "served"), true).await;
            assert!(!started.is_error, "{user:?}: {}", text(&started));
        }
        for (ctx, mine) in [(&first, "session one"), (&second, "session two")] {
            let fetched = run(ctx, &fetch_when_up("http://127.0.0.1:8000/marker"), false).await;
            let seen = text(&fetched);
            assert!(seen.contains(mine), "{user:?}: {seen}");
        }
        first.shells.kill_all().await;
        second.shells.kill_all().await;
    }
}

#[tokio::test]
async fn without_allow_local_binding_a_listener_is_refused_and_the_result_says_how_to_allow_it() {
    for user in User::both() {
        let dir = scratch(user);
        let ctx = session(user, dir.path(), false);
        let command = format!(
            "{PYTHON} -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print('bound')\""
        );
        let tried = run(&ctx, &command, false).await;
        let seen = text(&tried);
        assert!(!seen.contains("bound\n"), "{user:?}: {seen}");
        assert_eq!(
            blocked(&tried).as_deref(),
            Some("network disabled"),
            "{seen}"
        );
        assert!(seen.contains("allow_local_binding"), "{user:?}: {seen}");
        assert_eq!(
            ctx.session_net.state(),
            agent::tools::process::session_net::NetState::NotYetMade,
            "no namespace is made for a session that does not allow it"
        );
    }
}

/// The case through the real binary (`-p`, auto mode, the default sandbox, which
/// allows local binding): the model starts a dev server in the background, and its next
/// command fetches from it.
#[tokio::test]
async fn the_agent_serves_a_background_dev_server_to_its_next_command() {
    if !can_run(User::Me).await {
        return;
    }
    // No config: loopback listeners are the default.
    let env = support::env::env();
    serve_marker(env.cwd.path(), User::Me, "from the dev server");
    let server = support::server::FakeServer::start(vec![
        support::server::Reply::sse(support::chat::tool_call(
            "c1",
            "bash",
            json!({"command": server("127.0.0.1", 8000, "served"), "background": true}),
        )),
        support::server::Reply::sse(support::chat::tool_call(
            "c2",
            "bash",
            json!({"command": fetch_when_up("http://127.0.0.1:8000/marker"), "timeout": 600}),
        )),
        support::server::Reply::sse(support::chat::text("it answers")),
    ])
    .await;
    let output = env
        .agent(
            &server,
            &[
                "-p",
                "--permission-mode",
                "auto",
                "--sandbox",
                "workspace-write",
                "serve it",
            ],
        )
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let bodies = server.bodies();
    let sent = support::harness::transcript(bodies.last().unwrap()).join("\n");
    let fetched = sent.lines().find(|l| l.starts_with("tool:c2:")).unwrap();
    assert!(fetched.contains("from the dev server"), "{sent}");
    let started = sent.lines().find(|l| l.starts_with("tool:c1:")).unwrap();
    assert!(
        started.contains("Started in the background as shell_1"),
        "{sent}"
    );
}

/// `get_permissions` says whether commands share the session's loopback: on by default,
/// off when the config says so, `"unavailable"` where the namespace could not be made.
#[tokio::test]
async fn get_permissions_reports_local_binding() {
    use support::process::Rpc;
    for (config, expected) in [
        ("", json!(true)),
        ("[sandbox]\nallow_local_binding = false\n", json!(false)),
        ("[sandbox]\nnetwork = true\n", json!(false)),
    ] {
        let env = support::env::env();
        std::fs::write(env.home.path().join("config.toml"), config).unwrap();
        let server = support::server::FakeServer::start(vec![]).await;
        let mut rpc =
            Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--sandbox", "workspace-write"]));
        rpc.send(json!({"id": "p", "type": "get_permissions"}))
            .await;
        let permissions = rpc.response("p").await;
        let local = &permissions["data"]["sandbox"]["localBinding"];
        // No command ran yet, so no namespace was tried: the setting is what is shown.
        assert_eq!(local, &expected, "{config:?}: {permissions}");
    }
}
