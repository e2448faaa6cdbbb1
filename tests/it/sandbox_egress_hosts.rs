//! `[sandbox] allow_hosts` by *name*: the egress proxy's host matching attacked from inside
//! the sandbox with real clients (curl, Python's urllib) and with requests written by hand
//! to the proxy (look-alike names, the address behind an allowed name, `user@` tricks, case
//! and trailing dots, a `Host` header that disagrees with the target, origin-form
//! requests, a second request on a kept-alive connection), as root and as uid 65534.
//!
//! Nothing leaves this machine: the proxy of this test process resolves the names below to
//! the loopback registries (`agent::sandbox::egress::testing::resolve_name`, a table only
//! code in the same process can fill; the agent itself never does). `allowed.example` is
//! the registry on 127.0.0.2; every other name goes to the one on 127.0.0.3, so a trick
//! that fooled the proxy would show up in that registry's record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::sandbox::SandboxConfig;
use agent::sandbox::egress::{Pattern, testing};
use support::registry::{Registry, Seen};
use support::sandbox::{User, bash, blocked, config, give, sandbox, scratch, text};

const ALLOWED: &str = "allowed.example";
/// Names that must not pass for `allowed.example`, and one that is simply not listed.
const OTHERS: &[&str] = &[
    "other.example",
    "allowed.example.evil",
    "xallowed.example",
    "sub.allowed.example",
];

/// Both registries, and the names resolved to them in this process.
fn registries() -> (Registry, Registry) {
    let allowed = Registry::start("127.0.0.2");
    let other = Registry::start("127.0.0.3");
    testing::resolve_name(ALLOWED, allowed.addr.ip());
    for name in OTHERS {
        testing::resolve_name(name, other.addr.ip());
    }
    (allowed, other)
}

/// Workspace-write, network off, `allowed.example` on the allowed registry's port only.
fn allowed_by_name(allowed: &Registry) -> SandboxConfig {
    SandboxConfig {
        allow_hosts: vec![Pattern::parse(&format!("{ALLOWED}:{}", allowed.addr.port())).unwrap()],
        ..config(false)
    }
}

#[tokio::test]
async fn clients_reach_an_allowed_name_and_are_refused_a_look_alike() {
    for user in User::both() {
        let (allowed, other) = registries();
        allowed.file("/curl", "text/plain", "curl by name\n");
        allowed.file("/tunnel", "text/plain", "tunnel by name\n");
        allowed.file("/urllib", "text/plain", "urllib by name\n");
        let workspace = scratch(user);
        let (a, o) = (allowed.addr.port(), other.addr.port());
        let command = format!(
            "curl -sS http://{ALLOWED}:{a}/curl; \
             curl -sS -p http://{ALLOWED}:{a}/tunnel; \
             /usr/bin/python3 -c \"import urllib.request as u; \
             print(u.urlopen('http://{ALLOWED}:{a}/urllib', timeout=20).read().decode().strip())\"; \
             curl -sS http://allowed.example.evil:{o}/evil; \
             env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY \
             curl -sS --max-time 10 http://{ALLOWED}:{a}/curl || echo unproxied-failed; true"
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &allowed_by_name(&allowed)),
            &command,
        )
        .await;
        let text = text(&output);
        for expected in ["curl by name", "tunnel by name", "urllib by name"] {
            assert!(text.contains(expected), "{user:?}: {expected}: {text}");
        }
        assert!(
            text.contains(&format!(
                "agent sandbox: host allowed.example.evil is not in [sandbox] allow_hosts — \
                 add \"allowed.example.evil:{o}\""
            )),
            "{user:?}: {text}"
        );
        assert!(text.contains("unproxied-failed"), "{user:?}: {text}");
        assert_eq!(
            blocked(&output).as_deref(),
            Some("network: host allowed.example.evil is not in [sandbox] allow_hosts"),
            "{user:?}: {text}"
        );
        // The proxy resolved the names (curl never did) and sent the allowed host's name.
        let host = Some(format!("{ALLOWED}:{a}"));
        assert_eq!(
            allowed.seen(),
            ["/curl", "/tunnel", "/urllib"].map(|path| Seen::Request {
                line: format!("GET {path} HTTP/1.1"),
                host: host.clone(),
            }),
            "{user:?}: {text}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {text}");
    }
}

/// Requests written by hand to the command's proxy: prints `CASE => STATUS LINE`, and for a
/// tunnel that opened, `CASE inside => STATUS LINE` of the request sent through it.
const ATTACK: &str = r#"
import socket, sys

A, O = sys.argv[1], sys.argv[2]

def head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    text = data.decode("latin-1")
    length = 0
    for line in text.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            break
        body += chunk
    return text.split("\r\n")[0] or "(closed)"

def fill(text):
    return text.replace("{A}", A).replace("{O}", O).encode()

def ask(case, *requests, inside=None):
    sock = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    for request in requests:
        sock.sendall(fill(request))
        status = head(sock)
        print(case, "=>", status, flush=True)
    if inside is not None and " 200" in status:
        sock.sendall(fill(inside))
        print(case, "inside =>", head(sock), flush=True)
    sock.close()

get = lambda target, host: f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n"
connect = lambda target, host: f"CONNECT {target} HTTP/1.1\r\nHost: {host}\r\n\r\n"
inner = lambda path, host: f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"

# Allowed: the name, in any case, with a trailing dot, through a tunnel.
ask("plain", get("http://allowed.example:{A}/plain", "allowed.example:{A}"))
ask("case-dot", get("http://ALLOWED.Example.:{A}/case-dot", "x"))
ask("tunnel", connect("allowed.example:{A}", "allowed.example:{A}"),
    inside=inner("/tunnel", "allowed.example:{A}"))
# The address behind the allowed name is not the name.
ask("by-ip", connect("127.0.0.2:{A}", "127.0.0.2:{A}"), inside=inner("/by-ip", "x"))
ask("by-ip-plain", get("http://127.0.0.2:{A}/by-ip-plain", "127.0.0.2:{A}"))
ask("mapped-ip", connect("[::ffff:127.0.0.2]:{A}", "x"), inside=inner("/mapped-ip", "x"))
ask("decimal-ip", connect("2130706434:{A}", "x"), inside=inner("/decimal-ip", "x"))
# Look-alike names.
ask("suffix", connect("allowed.example.evil:{O}", "x"), inside=inner("/suffix", "x"))
ask("prefix", get("http://xallowed.example:{O}/prefix", "x"))
ask("sub", get("http://sub.allowed.example:{O}/sub", "x"))
ask("percent", get("http://allowed%2eexample:{A}/percent", "x"))
# user@ tricks: the host is what follows the last @.
ask("userinfo", get("http://allowed.example:{A}@other.example:{O}/userinfo", "x"))
ask("userinfo-connect", connect("allowed.example:{A}@other.example:{O}", "x"),
    inside=inner("/userinfo-connect", "x"))
ask("backslash", get("http://allowed.example:{A}\\@other.example:{O}/backslash", "x"))
# The Host header never chooses the target.
ask("host-header", get("http://allowed.example:{A}/host-header", "other.example:{O}"))
ask("host-plain", get("http://other.example:{O}/host-plain", "allowed.example:{A}"))
ask("host-connect", connect("other.example:{O}", "allowed.example:{A}"),
    inside=inner("/host-connect", "x"))
ask("origin-form", get("/origin-form", "allowed.example:{A}"))
# Each request on a kept-alive connection is judged.
ask("keep-alive", get("http://allowed.example:{A}/first", "x"),
    get("http://other.example:{O}/second", "x"))
"#;

#[tokio::test]
async fn host_matching_cannot_be_fooled_by_hand_written_requests() {
    for user in User::both() {
        let (allowed, other) = registries();
        for path in ["/plain", "/case-dot", "/tunnel", "/host-header", "/first"] {
            allowed.file(path, "text/plain", "ok\n");
        }
        let workspace = scratch(user);
        let script = workspace.path().join("attack.py");
        std::fs::write(&script, ATTACK).unwrap();
        give(&script, user);
        let (a, o) = (allowed.addr.port(), other.addr.port());
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &allowed_by_name(&allowed)),
            &format!("/usr/bin/python3 attack.py {a} {o}"),
        )
        .await;
        let text = text(&output);
        let status = |case: &str| -> String {
            let prefix = format!("{case} => ");
            let lines: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix(&prefix))
                .collect();
            assert!(!lines.is_empty(), "{user:?}: no answer for {case}: {text}");
            lines.join(" | ")
        };
        for case in ["plain", "case-dot", "host-header"] {
            assert_eq!(status(case), "HTTP/1.1 200 OK", "{user:?}: {case}: {text}");
        }
        assert_eq!(status("tunnel"), "HTTP/1.1 200 OK", "{user:?}: {text}");
        assert_eq!(
            status("tunnel inside"),
            "HTTP/1.1 200 OK",
            "{user:?}: {text}"
        );
        let refused =
            |host: &str| format!("HTTP/1.1 403 host {host} is not in [sandbox] allow_hosts");
        for (case, host) in [
            ("by-ip", "127.0.0.2"),
            ("by-ip-plain", "127.0.0.2"),
            ("mapped-ip", "::ffff:127.0.0.2"),
            ("decimal-ip", "2130706434"),
            ("suffix", "allowed.example.evil"),
            ("prefix", "xallowed.example"),
            ("sub", "sub.allowed.example"),
            ("userinfo", "other.example"),
            ("host-plain", "other.example"),
            ("host-connect", "other.example"),
        ] {
            assert_eq!(status(case), refused(host), "{user:?}: {case}: {text}");
        }
        assert_eq!(
            status("keep-alive"),
            format!("HTTP/1.1 200 OK | {}", refused("other.example")),
            "{user:?}: {text}"
        );
        // What the proxy cannot read as a host is a 400, never a connection.
        for case in ["percent", "userinfo-connect", "backslash", "origin-form"] {
            let answer = status(case);
            assert!(
                answer.starts_with("HTTP/1.1 400") || answer.starts_with("HTTP/1.1 403"),
                "{user:?}: {case}: {answer}\n{text}"
            );
        }
        // Only the allowed requests arrived, at the allowed registry, naming the allowed
        // host whatever `Host` the client sent.
        let host = Some(format!("{ALLOWED}:{a}"));
        assert_eq!(
            allowed.seen(),
            [
                ("/plain", host.clone()),
                ("/case-dot", host.clone()),
                ("/tunnel", host.clone()),
                ("/host-header", host.clone()),
                ("/first", host.clone()),
            ]
            .map(|(path, host)| Seen::Request {
                line: format!("GET {path} HTTP/1.1"),
                host,
            }),
            "{user:?}: {text}"
        );
        assert_eq!(other.seen(), [], "{user:?}: {text}");
        // The note names the first refused host and key, and the next few.
        assert_eq!(
            blocked(&output),
            Some(format!(
                "network: host 127.0.0.2 is not in [sandbox] allow_hosts (also refused: \
                 ::ffff:127.0.0.2:{a}, 2130706434:{a}, allowed.example.evil:{o}, \
                 xallowed.example:{o})"
            )),
            "{user:?}: {text}"
        );
        assert!(
            text.contains(&format!(
                "add \"127.0.0.2:{a}\" to allow_hosts under [sandbox]"
            )),
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn a_wildcard_name_that_resolves_to_this_machine_is_refused_an_exact_one_is_not() {
    let (_allowed, other) = registries();
    other.file("/local", "text/plain", "a service of this machine\n");
    let o = other.addr.port();
    let workspace = scratch(User::Me);
    let with = |entry: &str| SandboxConfig {
        allow_hosts: vec![Pattern::parse(entry).unwrap()],
        ..config(false)
    };
    // `sub.allowed.example` resolves to 127.0.0.3: below an allowed domain, but this machine.
    let output = bash(
        User::Me,
        workspace.path(),
        sandbox(workspace.path(), &with("*.allowed.example:*")),
        &format!("curl -sS http://sub.allowed.example:{o}/local"),
    )
    .await;
    let refused = text(&output);
    assert!(!refused.contains("a service of this machine"), "{refused}");
    assert_eq!(
        blocked(&output).as_deref(),
        Some(
            "network: host sub.allowed.example resolves to 127.0.0.3, an address of this \
             machine, which a wildcard in [sandbox] allow_hosts does not reach"
        ),
        "{refused}"
    );
    assert!(
        refused.contains(&format!(
            "add \"sub.allowed.example:{o}\" to allow_hosts under [sandbox]"
        )),
        "{refused}"
    );
    assert_eq!(other.seen(), [], "{refused}");
    // Named exactly, it is reached.
    let output = bash(
        User::Me,
        workspace.path(),
        sandbox(workspace.path(), &with(&format!("sub.allowed.example:{o}"))),
        &format!("curl -sS http://sub.allowed.example:{o}/local"),
    )
    .await;
    assert!(
        text(&output).contains("a service of this machine"),
        "{}",
        text(&output)
    );
    assert_eq!(blocked(&output), None);
}
