//! `agent serve --web` (docs/protocol.md §4.6): the web client in a real headless Chromium
//! (Debian's `chromium`, driven by tests/web/drive.mjs with playwright-core: open the page,
//! sign in with the token in the URL fragment, send a prompt and watch its deltas arrive,
//! reload mid-stream and see the same transcript, queue a steer and a follow-up, abort,
//! approve a command, see the todo list and the sub-agent tree, reload again),
//! and its sign-in attacked over raw HTTP: no token → 401, a foreign Host or Origin → 403, a
//! request signed in by cookie that changes anything without this server's Origin → 403,
//! the token never stored in the cookie nor written anywhere by the server.
//!
//! The browser test needs node, chromium and playwright-core (`tests/web/install.sh`);
//! without them it says it skipped (`support::skip`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::server::{End, FakeServer, Reply};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Child;

const TOKEN: &str = "web-s3cret-token";
const WEB_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web");

struct Serve {
    child: Child,
    /// Its stdout, open while it runs.
    _stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// `127.0.0.1:PORT`
    addr: String,
}

/// `agent serve --web ARGS` on a loopback port with `TOKEN` accepted, its model `upstream`.
async fn start(env: &Env, upstream: &FakeServer, args: &[&str]) -> Serve {
    let config = format!(
        "provider = \"local\"\nmodel = \"test-model\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
        upstream.v1()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("AGENT_SERVE_TOKENS", TOKEN)
        .env("RUST_LOG", "debug");
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("agent serve says where it listens")
        .unwrap()
        .unwrap_or_default();
    let addr = first
        .trim()
        .strip_prefix("agent serve: listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    Serve {
        child,
        _stdout: stdout,
        addr,
    }
}

/// An answer: its status, head (lower-cased names) and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One raw request (`host` is this server's unless given).
async fn call(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(name, _)| *name == "host") {
        head.push_str(&format!("host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    Answer {
        status: head[9..12].parse().unwrap(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// Every file under `dir`, read as text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(files_under(&path));
            } else if let Ok(bytes) = std::fs::read(&path) {
                found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    found
}

#[tokio::test]
async fn web_sign_in_trades_the_token_for_a_cookie_and_refuses_foreign_pages() {
    let env = env();
    let upstream = FakeServer::start(vec![]).await;
    let serve = start(&env, &upstream, &["--web"]).await;
    let addr = serve.addr.as_str();
    let own = format!("http://{addr}");
    let own_origin = ("origin", own.as_str());

    // The page itself is public (it holds nothing); what it reads is not.
    let page = call(addr, "GET", "/", &[], "").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/app.js"), "{}", page.body);
    let policy = page.header("content-security-policy").unwrap();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    let etag = page.header("etag").unwrap();
    let cached = call(addr, "GET", "/", &[("if-none-match", &etag)], "").await;
    assert_eq!(cached.status, 304);
    assert_eq!(call(addr, "GET", "/v1/sessions", &[], "").await.status, 401);
    // DNS rebinding: the page under another name is refused like everything else.
    let rebound = ("host", "attacker.example:80");
    assert_eq!(call(addr, "GET", "/", &[rebound], "").await.status, 403);

    let login = |origin: Option<&'static str>, token: &str| {
        let body = json!({ "token": token }).to_string();
        let own = own.clone();
        async move {
            let origin = origin.map_or(own, str::to_string);
            call(addr, "POST", "/v1/web/login", &[("origin", &origin)], &body).await
        }
    };
    // Another site's page cannot sign the browser in, nor can a request without an Origin.
    let foreign = login(Some("http://attacker.example"), TOKEN).await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let body = json!({ "token": TOKEN }).to_string();
    let bare = call(addr, "POST", "/v1/web/login", &[], &body).await;
    assert_eq!(bare.status, 403, "{}", bare.body);
    assert!(bare.header("set-cookie").is_none());
    let wrong = login(None, "not-the-token").await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(wrong.header("set-cookie").is_none());

    let signed = login(None, TOKEN).await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let set = signed.header("set-cookie").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains(TOKEN), "the cookie carries the token: {set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let with_cookie = ("cookie", cookie.as_str());

    // Signed in by cookie: reads are answered.
    let listed = call(addr, "GET", "/v1/sessions", &[with_cookie], "").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    // A change without this server's Origin is refused (a form or script elsewhere), and
    // so is one with another site's.
    let forged = call(addr, "POST", "/v1/sessions", &[with_cookie], "{}").await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let foreign = ("origin", "http://attacker.example");
    let cross = call(addr, "POST", "/v1/sessions", &[with_cookie, foreign], "{}").await;
    assert_eq!(cross.status, 403, "{}", cross.body);
    assert!(
        env.session_files().is_empty(),
        "a refused request started a session"
    );
    // With it, the change is made.
    let made = call(
        addr,
        "POST",
        "/v1/sessions",
        &[with_cookie, own_origin],
        "{}",
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    // A cookie the server did not hand out is no sign-in.
    let forged_cookie = ("cookie", "agent_web=00112233445566778899aabbccddeeff");
    assert_eq!(
        call(addr, "GET", "/v1/sessions", &[forged_cookie], "")
            .await
            .status,
        401
    );
    // Signing out forgets the sign-in.
    let out = call(
        addr,
        "POST",
        "/v1/web/logout",
        &[with_cookie, own_origin],
        "",
    )
    .await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(
        call(addr, "GET", "/v1/sessions", &[with_cookie], "")
            .await
            .status,
        401
    );

    // The token is written nowhere: not in the logs (at debug level), not in any file.
    let Serve {
        mut child,
        _stdout: mut stdout,
        ..
    } = serve;
    child.start_kill().unwrap();
    let mut said = String::new();
    while let Ok(Some(line)) = stdout.next_line().await {
        said.push_str(&line);
    }
    let output = child.wait_with_output().await.unwrap();
    said.push_str(&String::from_utf8_lossy(&output.stderr));
    assert!(!said.contains(TOKEN), "the server printed the token");
    for (path, text) in files_under(env.home.path()) {
        assert!(!text.contains(TOKEN), "{} holds the token", path.display());
    }
}

#[tokio::test]
async fn web_client_is_not_served_without_the_flag() {
    let env = env();
    let upstream = FakeServer::start(vec![]).await;
    let serve = start(&env, &upstream, &[]).await;
    let addr = serve.addr.as_str();
    assert_eq!(
        call(
            addr,
            "GET",
            "/",
            &[("authorization", "Bearer web-s3cret-token")],
            ""
        )
        .await
        .status,
        404
    );
    let own = format!("http://{}", serve.addr);
    let body = json!({ "token": TOKEN }).to_string();
    let login = call(addr, "POST", "/v1/web/login", &[("origin", &own)], &body).await;
    assert!(login.header("set-cookie").is_none(), "{}", login.head);
}

/// The browser (Debian's chromium), or why the browser test cannot run here.
async fn browser() -> Result<PathBuf, String> {
    let node = tokio::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if !node.is_ok_and(|status| status.success()) {
        return Err("node is not installed".into());
    }
    if !Path::new(WEB_DIR)
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return Err(format!(
            "playwright-core is not installed: run {WEB_DIR}/install.sh (needs npm)"
        ));
    }
    let chromium = std::env::var_os("CHROMIUM").map(PathBuf::from).or_else(|| {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
    });
    chromium.ok_or_else(|| {
        format!("chromium is not installed: run {WEB_DIR}/install.sh as root (Debian's chromium)")
    })
}

/// An answer streamed as `deltas`, one every `every`, which then stops mid-message (the run
/// stays busy until it is aborted).
fn stalls_after(deltas: &[&str], every: Duration) -> Reply {
    let mut frames = chat::text_deltas(deltas);
    // Without the finish, the usage and `[DONE]`.
    frames.truncate(frames.len() - 3);
    Reply::sse(frames).slowly(every).then(End::Stall)
}

#[tokio::test]
async fn web_client_streams_approves_aborts_and_survives_a_reload_in_chromium() {
    let chromium = match browser().await {
        Ok(chromium) => chromium,
        Err(why) => {
            support::skip::skip(&why);
            return;
        }
    };
    let env = env();
    let upstream = FakeServer::start(vec![
        stalls_after(
            &["Hello ", "from ", "the ", "web ", "client"],
            Duration::from_millis(400),
        ),
        Reply::sse(chat::tool_calls(&[
            (
                "t1",
                "todo_write",
                json!({"todos": [
                    {"content": "Run the command", "status": "in_progress"},
                    {"content": "Report back", "status": "pending"},
                ]}),
            ),
            (
                "c1",
                "bash",
                json!({"command": "touch made-by-web; echo approved-$((40+2))"}),
            ),
        ])),
        Reply::sse(chat::tool_call(
            "k1",
            "task",
            json!({"description": "look around", "prompt": "CHILD-JOB"}),
        )),
        // A hostile answer: markup that would run script if the page took it for HTML.
        Reply::sse(chat::text(
            "All done. <img src=x onerror=\"window.pwned=1\"> [click](javascript:window.pwned=2) \
             `<b>code</b>`\n\n```html\n<script>window.pwned=3</script>\n```\n",
        )),
    ])
    .await;
    upstream.route("CHILD-JOB", vec![Reply::sse(chat::text("child done"))]);
    let serve = start(&env, &upstream, &["--web"]).await;
    let profile = tempfile::tempdir().unwrap();
    let mut driver = tokio::process::Command::new("node");
    driver
        .arg(Path::new(WEB_DIR).join("drive.mjs"))
        .current_dir(WEB_DIR)
        .env("WEB_URL", format!("http://{}", serve.addr))
        .env("WEB_TOKEN", TOKEN)
        .env("CHROMIUM", &chromium)
        .env("USER_DATA_DIR", profile.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(shots) = std::env::var_os("WEB_SHOTS") {
        driver.env("SHOTS", shots);
    }
    let run = tokio::time::timeout(Duration::from_secs(600), driver.output())
        .await
        .expect("the browser script ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.lines().any(|l| l == "OK"),
        "the browser script failed:\n{stdout}\n{stderr}"
    );
    // What the page did happened: the approved command ran.
    assert!(env.cwd.path().join("made-by-web").exists());
    drop(serve);
}
