//! Network by host (`[sandbox] allow_hosts`): sandboxed commands reach the named hosts
//! through the agent's egress proxy and nothing else — attacked with real clients (curl,
//! pip, npm, raw sockets) below the real supervisor, as root and as an unprivileged user
//! (whose sandbox makes its namespaces inside a user namespace).
//!
//! The "registries" are loopback servers of this test (`support::registry`) on 127.0.0.2
//! and 127.0.0.3. They live in the agent's network namespace; the command lives in one of
//! its own, where those addresses are its own empty loopback. So a request that reaches a
//! registry went through the proxy, and a direct connection (a client told to ignore the
//! proxy, a raw socket) finds nothing — which the registry's record of connections shows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::sandbox::SandboxConfig;
use agent::sandbox::egress::Pattern;
use support::registry::{Registry, Seen};
use support::sandbox::{User, bash, blocked, config, sandbox, scratch, text};

/// Workspace-write, network off, these hosts through the proxy.
fn hosts(entries: &[&str]) -> SandboxConfig {
    SandboxConfig {
        allow_hosts: entries.iter().map(|e| Pattern::parse(e).unwrap()).collect(),
        ..config(false)
    }
}

#[tokio::test]
async fn curl_reaches_the_named_host_only_through_the_proxy() {
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        allowed.file("/hello", "text/plain", "hello from the registry\n");
        let other = Registry::start("127.0.0.3");
        other.file("/secret", "text/plain", "the other registry answered\n");
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port()]);
        let command = format!(
            "echo uid=$(id -u); curl -sS {a}/hello; curl -sS {o}/secret; \
             curl -sS --noproxy '*' --max-time 10 {a}/hello || echo direct-failed; true",
            a = allowed.url(),
            o = other.url()
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config),
            &command,
        )
        .await;
        let text = text(&output);
        support::sandbox::assert_ran_as(user, &text);
        assert!(text.contains("hello from the registry"), "{user:?}: {text}");
        assert!(
            text.contains(&format!(
                "agent sandbox: host 127.0.0.3 is not in [sandbox] allow_hosts — add \"127.0.0.3:{}\"",
                other.addr.port()
            )),
            "{user:?}: the proxy's answer names the host and the key: {text}"
        );
        assert!(
            !text.contains("the other registry answered"),
            "{user:?}: {text}"
        );
        assert!(text.contains("direct-failed"), "{user:?}: {text}");
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: {text}"
        );
        assert!(
            text.contains(
                "Blocked by the sandbox: network: host 127.0.0.3 is not in [sandbox] allow_hosts"
            ),
            "{user:?}: {text}"
        );
        // One request arrived, through the proxy; the direct attempt found nothing.
        assert_eq!(
            allowed.seen(),
            [Seen::Request {
                line: "GET /hello HTTP/1.1".to_string(),
                host: Some(allowed.host_port()),
            }],
            "{user:?}: {text}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {text}");
    }
}

#[tokio::test]
async fn connect_tunnels_reach_the_named_host_and_are_refused_for_another() {
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        allowed.file("/tunnelled", "text/plain", "through the tunnel\n");
        let other = Registry::start("127.0.0.3");
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port()]);
        // `-p`: a CONNECT tunnel for plain HTTP; `https://`: CONNECT, then TLS, which the
        // plain registry does not speak (it records the handshake).
        let command = format!(
            "curl -sS -p {a}/tunnelled; \
             curl -sS -p {o}/x || echo refused-tunnel; \
             curl -sS --max-time 10 https://{ah}/ || echo tls-failed; \
             curl -sS --max-time 10 https://{oh}/ || echo refused-https; true",
            a = allowed.url(),
            o = other.url(),
            ah = allowed.host_port(),
            oh = other.host_port(),
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config),
            &command,
        )
        .await;
        let text = text(&output);
        assert!(text.contains("through the tunnel"), "{user:?}: {text}");
        assert!(text.contains("refused-tunnel"), "{user:?}: {text}");
        assert!(
            text.contains("CONNECT tunnel failed, response 403"),
            "{user:?}: {text}"
        );
        assert!(text.contains("tls-failed"), "{user:?}: {text}");
        assert!(text.contains("refused-https"), "{user:?}: {text}");
        assert_eq!(
            allowed.seen(),
            [
                Seen::Request {
                    line: "GET /tunnelled HTTP/1.1".to_string(),
                    host: Some(allowed.host_port()),
                },
                Seen::Tls
            ],
            "{user:?}: {text}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {text}");
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: {text}"
        );
    }
}

/// The system's own Python (the one a user other than root can run), if it has pip.
fn system_pip() -> Option<&'static str> {
    let python = "/usr/bin/python3";
    let works = std::process::Command::new(python)
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    works.then_some(python)
}

/// A wheel of `tinypkg` 1.0 (made with the system's Python, outside any sandbox).
fn wheel(python: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tinypkg-1.0-py3-none-any.whl");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   z.writestr('tinypkg/__init__.py', 'VALUE = 1\\n')\n\
        \x20   z.writestr('tinypkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')\n\
        \x20   z.writestr('tinypkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
        \x20   z.writestr('tinypkg-1.0.dist-info/RECORD', '')\n";
    let made = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&path)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    std::fs::read(path).unwrap()
}

#[tokio::test]
async fn pip_downloads_from_the_named_index_and_is_refused_another() {
    let Some(python) = system_pip() else {
        support::skip::skip("/usr/bin/python3 has no pip");
        return;
    };
    let wheel = wheel(python);
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        allowed.file(
            "/simple/tinypkg/",
            "text/html",
            "<html><body><a href=\"/files/tinypkg-1.0-py3-none-any.whl\">\
             tinypkg-1.0-py3-none-any.whl</a></body></html>\n",
        );
        allowed.file(
            "/files/tinypkg-1.0-py3-none-any.whl",
            "application/octet-stream",
            wheel.clone(),
        );
        let other = Registry::start("127.0.0.3");
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port()]);
        let pip = format!(
            "HOME=$PWD {python} -m pip download --no-cache-dir --no-deps \
             --disable-pip-version-check --no-input --retries 0 --timeout 20"
        );
        let command = format!(
            "{pip} --index-url {a}/simple/ --dest dl tinypkg==1.0 && ls dl; \
             {pip} --index-url {o}/simple/ --dest dl2 tinypkg==1.0 || echo pip-refused; true",
            a = allowed.url(),
            o = other.url(),
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config),
            &command,
        )
        .await;
        let text = text(&output);
        assert!(
            workspace
                .path()
                .join("dl/tinypkg-1.0-py3-none-any.whl")
                .is_file(),
            "{user:?}: {text}"
        );
        let requests = allowed.requests();
        assert!(
            requests.contains(&"GET /simple/tinypkg/ HTTP/1.1".to_string())
                && requests
                    .contains(&"GET /files/tinypkg-1.0-py3-none-any.whl HTTP/1.1".to_string()),
            "{user:?}: {requests:?}\n{text}"
        );
        assert!(text.contains("pip-refused"), "{user:?}: {text}");
        assert_eq!(other.seen(), [], "{user:?}: {text}");
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn npm_views_the_named_registry_and_is_refused_another() {
    let has_npm = std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_npm {
        support::skip::skip("npm is not installed");
        return;
    }
    let packument = serde_json::json!({
        "name": "tinypkg",
        "dist-tags": {"latest": "1.0.7"},
        "versions": {"1.0.7": {
            "name": "tinypkg",
            "version": "1.0.7",
            "dist": {"tarball": "http://127.0.0.2/tinypkg-1.0.7.tgz", "shasum": "0"}
        }}
    })
    .to_string();
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        allowed.file("/tinypkg", "application/json", packument.clone());
        let other = Registry::start("127.0.0.3");
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port()]);
        let npm = "HOME=$PWD npm_config_cache=$PWD/.npm npm_config_update_notifier=false \
                   npm view --fetch-retries=0";
        let command = format!(
            "{npm} --registry {a}/ tinypkg version; \
             {npm} --registry {o}/ tinypkg version || echo npm-refused; true",
            a = allowed.url(),
            o = other.url(),
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config),
            &command,
        )
        .await;
        let text = text(&output);
        assert!(text.contains("1.0.7"), "{user:?}: {text}");
        assert!(
            allowed
                .requests()
                .iter()
                .any(|line| line.starts_with("GET /tinypkg ")),
            "{user:?}: {:?}\n{text}",
            allowed.seen()
        );
        assert!(text.contains("npm-refused"), "{user:?}: {text}");
        assert!(
            text.contains("403 host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: npm shows the proxy's reason: {text}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {text}");
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn raw_sockets_reach_nothing_outside_the_command_namespace() {
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        let local = Registry::start("127.0.0.1");
        // A "DNS server" of this test, on a loopback address of the agent's namespace.
        let dns = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
        dns.set_nonblocking(true).unwrap();
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port(), &local.host_port()]);
        let script = format!(
            "import socket\n\
             def attempt(name, f):\n\
             \x20   try:\n\
             \x20       f()\n\
             \x20       print(name, 'REACHED')\n\
             \x20   except OSError as e:\n\
             \x20       print(name, 'failed:', e)\n\
             attempt('tcp-registry', lambda: socket.create_connection(('127.0.0.2', {a}), timeout=10))\n\
             attempt('tcp-localhost', lambda: socket.create_connection(('127.0.0.1', {l}), timeout=10))\n\
             def udp():\n\
             \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             \x20   s.sendto(b'x', ('192.0.2.1', 53))\n\
             attempt('udp', udp)\n\
             def dns():\n\
             \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             \x20   s.settimeout(10)\n\
             \x20   s.connect(('127.0.0.2', {d}))\n\
             \x20   s.send(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01')\n\
             \x20   s.recv(512)\n\
             attempt('dns', dns)\n\
             attempt('netlink', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))\n\
             attempt('resolve', lambda: socket.getaddrinfo('example.com', 443))\n\
             import ctypes, os\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def steal():\n\
             \x20   pidfd = os.pidfd_open({agent})\n\
             \x20   for fd in range(64):\n\
             \x20       if libc.syscall(438, pidfd, fd, 0) >= 0:\n\
             \x20           return\n\
             \x20   raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n\
             attempt('steal-fd', steal)\n",
            a = allowed.addr.port(),
            l = local.addr.port(),
            d = dns.local_addr().unwrap().port(),
            // The agent, whose sockets live in its own namespace (here: this test).
            agent = std::process::id(),
        );
        std::fs::write(workspace.path().join("attack.py"), script).unwrap();
        support::sandbox::give(&workspace.path().join("attack.py"), user);
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config),
            "/usr/bin/python3 attack.py; exit 3",
        )
        .await;
        let text = text(&output);
        for name in [
            "tcp-registry",
            "tcp-localhost",
            "udp",
            "dns",
            "netlink",
            "resolve",
            "steal-fd",
        ] {
            assert!(
                text.contains(&format!("{name} failed:")),
                "{user:?}: {name}: {text}"
            );
        }
        assert!(!text.contains("REACHED"), "{user:?}: {text}");
        assert_eq!(allowed.seen(), [], "{user:?}: {text}");
        assert_eq!(local.seen(), [], "{user:?}: {text}");
        // The query went to the command's own loopback (where nothing listens: `dns
        // failed: connection refused`), not to this one.
        let mut buffer = [0u8; 512];
        assert_eq!(
            dns.recv(&mut buffer).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "{user:?}: {text}"
        );
        // Nothing went through the proxy: the errors are explained as going around it.
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: only [sandbox] allow_hosts, through the agent's proxy"),
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn only_an_entry_naming_the_host_reaches_an_address_of_this_machine() {
    let registry = Registry::start("127.0.0.2");
    registry.file("/hello", "text/plain", "hello\n");
    let workspace = scratch(User::Me);
    // `*` allows every host, but not this machine's own addresses.
    let output = bash(
        User::Me,
        workspace.path(),
        sandbox(workspace.path(), &hosts(&["*:*"])),
        &format!("curl -sS {}/hello", registry.url()),
    )
    .await;
    let refused = text(&output);
    assert!(
        refused.contains("host 127.0.0.2 resolves to 127.0.0.2, an address of this machine"),
        "{refused}"
    );
    assert!(!refused.contains("hello\n"), "{refused}");
    assert_eq!(registry.seen(), []);
    // A host named without its port allows 80 and 443 only.
    let output = bash(
        User::Me,
        workspace.path(),
        sandbox(workspace.path(), &hosts(&["127.0.0.2"])),
        &format!("curl -sS {}/hello", registry.url()),
    )
    .await;
    assert_eq!(
        blocked(&output),
        Some(format!(
            "network: port {} of host 127.0.0.2 is not in [sandbox] allow_hosts (only 80 and 443)",
            registry.addr.port()
        ))
    );
    assert_eq!(registry.seen(), []);
    // Named with its port, it is reached.
    let output = bash(
        User::Me,
        workspace.path(),
        sandbox(workspace.path(), &hosts(&[&registry.host_port()])),
        &format!("curl -sS {}/hello", registry.url()),
    )
    .await;
    assert!(text(&output).contains("hello\n"), "{}", text(&output));
    assert_eq!(blocked(&output), None);
}

#[tokio::test]
async fn the_agent_takes_allow_hosts_from_its_config_shows_them_and_names_a_bad_one() {
    use serde_json::json;
    use support::chat;
    use support::process::{Rpc, run};
    use support::server::{FakeServer, Reply};
    let env = support::env::env();
    let allowed = Registry::start("127.0.0.2");
    allowed.file("/hello", "text/plain", "hello through the agent\n");
    let other = Registry::start("127.0.0.3");
    let config = env.home.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[sandbox]\nallow_hosts = [\"{}\"]\n", allowed.host_port()),
    )
    .unwrap();
    let command = format!(
        "curl -sS {}/hello; curl -sS {}/x",
        allowed.url(),
        other.url()
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "p", "type": "get_permissions"}))
        .await;
    let permissions = rpc.response("p").await;
    assert_eq!(
        permissions["data"]["sandbox"]["allowHosts"],
        json!([allowed.host_port()]),
        "{permissions}"
    );
    assert_eq!(permissions["data"]["sandbox"]["network"], false);
    rpc.send(json!({"id": "go", "type": "prompt", "message": "fetch it"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hello through the agent"), "{text}");
    assert_eq!(
        result["result"]["details"]["sandbox"]["blocked"],
        "network: host 127.0.0.3 is not in [sandbox] allow_hosts",
        "{result}"
    );
    assert_eq!(other.seen(), []);
    drop(rpc);

    std::fs::write(
        &config,
        "[sandbox]\nallow_hosts = [\n  \"pypi.org\",\n  \"https://files.pythonhosted.org\",\n]\n",
    )
    .unwrap();
    let out = run(env.agent(&server, &["-p", "go"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("`sandbox.allow_hosts[1]`")
            && out.stderr.contains("is not a host")
            && out.stderr.contains("(line 4)"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_background_shell_is_told_once_which_host_its_proxy_refused() {
    use agent::tools::Tool;
    use agent::tools::background::tools::BashOutputTool;
    use serde_json::json;
    for user in User::both() {
        let allowed = Registry::start("127.0.0.2");
        allowed.file("/hello", "text/plain", "hello in the background\n");
        let other = Registry::start("127.0.0.3");
        let workspace = scratch(user);
        let config = hosts(&[&allowed.host_port()]);
        let ctx =
            support::sandbox::context(user, workspace.path(), sandbox(workspace.path(), &config));
        let command = format!(
            "curl -sS {}/x; curl -sS {}/hello",
            other.url(),
            allowed.url()
        );
        let started = agent::tools::bash::BashTool
            .execute(
                json!({ "command": command, "background": true }),
                ctx.clone(),
            )
            .await;
        let id = started.details.as_ref().unwrap()["shellId"]
            .as_str()
            .unwrap()
            .to_string();
        let mut texts = vec![text(&started)];
        let mut notes = Vec::new();
        // Look every 10 ms until it ended (at most a minute).
        for _ in 0..6000 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let read = BashOutputTool
                .execute(json!({ "id": id }), ctx.clone())
                .await;
            texts.push(text(&read));
            let details = read.details.unwrap();
            if let Some(note) = details.pointer("/sandbox/blocked") {
                notes.push(note.as_str().unwrap().to_string());
            }
            if details["status"] != "running" {
                break;
            }
        }
        assert!(
            texts.last().unwrap().contains("exited"),
            "{user:?}: {texts:?}"
        );
        let all = texts.join("\n");
        assert!(all.contains("hello in the background"), "{user:?}: {all}");
        // Told once, in whichever answer followed the refusal (the start's own, or a
        // bash_output's, which also carries it in its details).
        let note = "Blocked by the sandbox: network: host 127.0.0.3 is not in [sandbox] \
                    allow_hosts. Sandboxed commands reach only the hosts of [sandbox] \
                    allow_hosts, through the agent's proxy: add \"127.0.0.3:";
        assert_eq!(all.matches(note).count(), 1, "{user:?}: {all}");
        assert!(
            notes.len() <= 1
                && notes
                    .iter()
                    .all(|n| n == "network: host 127.0.0.3 is not in [sandbox] allow_hosts"),
            "{user:?}: {notes:?}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {all}");
        ctx.shells.kill_all().await;
    }
}
