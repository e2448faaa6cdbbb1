//! `[sandbox] deny_read`: secret files are unreadable to sandboxed commands — whatever path
//! leads there (a link, `/proc/self/root`, a hard link, a copy), as root and as an
//! unprivileged user — and to the agent's own read, grep, find and ls; every refusal says
//! which entry refused it and how to lift it. Patterns (`.env*`) cover project files, also
//! one made after the agent started; `allow_read` and the default exceptions
//! (`.env.example`) stay readable, and so does a virtualenv named `.env`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::message::join_text;
use agent::sandbox::deny_read::{DEFAULT_ALLOW, DenyRead, entry};
use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status};
use agent::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::sandbox::{User, assert_ran_as, bash, blocked, give, scratch, text};

const KEY: &str = "SECRET-KEY-0001";
const ENV: &str = "SECRET-ENV-0002";
const LOCAL: &str = "SECRET-LOCAL-0003";
const LATE: &str = "SECRET-LATE-0004";
const AWS: &str = "SECRET-AWS-0005";

/// A home with secrets, and a workspace with environment files.
struct Fixture {
    _home: tempfile::TempDir,
    _workspace: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn fixture(user: User) -> Fixture {
    let home_dir = scratch(User::Me);
    let workspace = scratch(User::Me);
    let home = std::fs::canonicalize(home_dir.path()).unwrap();
    let ws = std::fs::canonicalize(workspace.path()).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), KEY).unwrap();
    // A denied path that is a link (a dotfiles manager's): where it leads is kept too.
    std::fs::create_dir_all(home.join("dotfiles/aws")).unwrap();
    std::fs::write(home.join("dotfiles/aws/credentials"), AWS).unwrap();
    std::os::unix::fs::symlink(home.join("dotfiles/aws"), home.join(".aws")).unwrap();
    std::fs::write(ws.join(".env"), ENV).unwrap();
    std::fs::create_dir_all(ws.join("svc")).unwrap();
    std::fs::write(ws.join("svc/.env.local"), LOCAL).unwrap();
    std::fs::write(ws.join(".env.example"), "EXAMPLE-OK").unwrap();
    std::fs::create_dir_all(ws.join("py/.env/bin")).unwrap();
    std::fs::write(ws.join("py/.env/bin/tool"), "VENV-OK").unwrap();
    std::fs::write(ws.join("notes.txt"), "PLAIN-OK").unwrap();
    // Readable by mode to everyone: only deny_read stands in the way.
    for dir in [&home, &ws] {
        std::process::Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(dir)
            .status()
            .unwrap();
    }
    give(&ws, user);
    Fixture {
        _home: home_dir,
        _workspace: workspace,
        home,
        ws,
    }
}

/// The default entries (home entries pointed at the fixture's home), and the default
/// exceptions.
fn deny_read(f: &Fixture) -> DenyRead {
    let agent_home = f.home.join("agent");
    let deny = [
        "~/.ssh",
        "~/.aws",
        "~/.netrc",
        "$AGENT_HOME/auth.json",
        ".env",
        ".env.*",
    ]
    .iter()
    .map(|e| entry(e, Some(&f.home), &agent_home).unwrap())
    .collect();
    let allow = DEFAULT_ALLOW
        .iter()
        .map(|e| entry(e, Some(&f.home), &agent_home).unwrap())
        .collect();
    DenyRead::new(deny, allow, &f.ws).unwrap()
}

fn sandbox(f: &Fixture) -> Sandbox {
    sandbox_in(f, SandboxMode::WorkspaceWrite)
}

fn sandbox_in(f: &Fixture, mode: SandboxMode) -> Sandbox {
    let config = SandboxConfig {
        mode,
        deny_read: deny_read(f),
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::start(&config, &f.ws);
    assert_eq!(sandbox.status, Status::Enforced);
    sandbox
}

#[tokio::test]
async fn sandboxed_commands_cannot_read_denied_paths_by_any_route() {
    let runs = User::both().into_iter().flat_map(|user| {
        [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly].map(|mode| (user, mode))
    });
    for (user, mode) in runs {
        let f = fixture(user);
        let sandbox = sandbox_in(&f, mode);
        // Made after the agent started: still covered.
        std::fs::write(f.ws.join(".env.late"), LATE).unwrap();
        give(&f.ws.join(".env.late"), user);
        let key = f.home.join(".ssh/id_ed25519");
        // Every process's root, the supervisor's and this test's (outside the mask) too.
        let command = format!(
            "echo uid=$(id -u); cat {key}; ls {ssh}; cat .env; cat svc/.env.local; \
             cat .env.late; cat svc/../.env; cat /proc/self/root{key}; \
             for p in /proc/[0-9]*; do cat $p/root{key} $p/cwd/.env; done 2>/dev/null; \
             ln -s {key} link; cat link; ln -s {home} h; cat h/.ssh/../.ssh/id_ed25519; \
             ln .env hard; cat hard; cp .env /tmp/copied-$$ && cat /tmp/copied-$$; \
             cat {home}/.aws/credentials {home}/dotfiles/aws/credentials; \
             /usr/bin/python3 -c 'import subprocess; subprocess.run([\"cat\", \"{key}\", \".env\"])'; \
             /usr/bin/python3 -c 'print(open(\"/proc/self/root{key}\").read())'; \
             grep -r SECRET . {home}; tar cf - .env 2>&1 | cat; \
             cat .env.example; echo; cat py/.env/bin/tool; echo; cat notes.txt; echo; true",
            key = key.display(),
            ssh = f.home.join(".ssh").display(),
            home = f.home.display(),
        );
        let output = bash(user, &f.ws, sandbox, &command).await;
        let text = text(&output);
        assert_ran_as(user, &text);
        for secret in [KEY, ENV, LOCAL, LATE, AWS] {
            assert!(
                !text.contains(secret),
                "{user:?} {mode:?}: {secret} was read:\n{text}"
            );
        }
        for readable in ["EXAMPLE-OK", "VENV-OK", "PLAIN-OK"] {
            assert!(
                text.contains(readable),
                "{user:?} {mode:?}: {readable} unread:\n{text}"
            );
        }
        let refused = blocked(&output).unwrap_or_default();
        assert_eq!(
            refused,
            format!(
                "read of a path deny_read keeps from commands: {}",
                key.display()
            ),
            "{user:?} {mode:?}: {text}"
        );
        assert!(
            text.contains("allow_read = [\"~/.ssh\"]"),
            "{user:?} {mode:?}: the remedy names the key: {text}"
        );
        // The files themselves are untouched.
        assert_eq!(std::fs::read_to_string(f.ws.join(".env")).unwrap(), ENV);
    }
}

fn context(f: &Fixture, sandbox: Sandbox) -> ToolContext {
    let mut settings = support::harness::tool_settings();
    settings.sandbox = sandbox;
    ToolContext {
        tool_call_id: String::new(),
        cwd: f.ws.clone(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: Arc::new(|_| {}),
        settings: Arc::new(settings),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    }
}

async fn call(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> ToolOutput {
    tool.execute(args, ctx.clone()).await
}

fn refused(output: &ToolOutput, entry: &str) -> bool {
    let text = join_text(&output.content);
    output.is_error
        && text.starts_with("Refused: ")
        && text.contains(&format!("(the entry `{entry}`)"))
        && text.contains(&format!("allow_read = [\"{entry}\"]"))
}

#[tokio::test]
async fn the_agents_file_tools_honour_the_same_list() {
    use agent::tools::{
        edit::EditTool, find::FindTool, grep::GrepTool, ls::LsTool, read::ReadTool,
    };
    let f = fixture(User::Me);
    // The tools honour deny_read also with commands unsandboxed (`--sandbox off`).
    let off = SandboxConfig {
        mode: SandboxMode::Off,
        deny_read: deny_read(&f),
        ..SandboxConfig::default()
    };
    for sandbox in [sandbox(&f), Sandbox::start(&off, &f.ws)] {
        let ctx = context(&f, sandbox);
        let key = f.home.join(".ssh/id_ed25519");
        std::os::unix::fs::symlink(&key, f.ws.join("key-link")).ok();
        std::fs::hard_link(f.ws.join(".env"), f.ws.join("innocent.txt")).ok();
        // The home seen from the workspace through `..`.
        let up = format!(
            "../{}/.ssh/id_ed25519",
            f.home
                .strip_prefix(f.ws.parent().unwrap())
                .unwrap()
                .display()
        );
        let aws = f
            .home
            .join("dotfiles/aws/credentials")
            .display()
            .to_string();
        for (path, entry) in [
            (key.display().to_string(), "~/.ssh"),
            (up, "~/.ssh"),
            (aws, "~/.aws"),
            ("svc/../.env".to_string(), ".env"),
            (".env".to_string(), ".env"),
            ("svc/.env.local".to_string(), ".env.*"),
            ("key-link".to_string(), "~/.ssh"),
            ("innocent.txt".to_string(), ".env"),
        ] {
            let output = call(&ReadTool, json!({"path": path}), &ctx).await;
            assert!(refused(&output, entry), "read {path}: {:?}", output.content);
        }
        let output = call(&ReadTool, json!({"path": ".env.example"}), &ctx).await;
        assert!(!output.is_error, "{:?}", output.content);

        let output = call(&GrepTool, json!({"pattern": "SECRET|OK"}), &ctx).await;
        let text = join_text(&output.content);
        assert!(!text.contains("SECRET"), "{text}");
        assert!(
            text.contains("EXAMPLE-OK") && text.contains("PLAIN-OK"),
            "{text}"
        );
        assert!(
            text.contains("deny_read"),
            "the left-out files are said: {text}"
        );
        let ssh = f.home.join(".ssh").display().to_string();
        let output = call(&GrepTool, json!({"pattern": "SECRET", "path": ssh}), &ctx).await;
        assert!(refused(&output, "~/.ssh"), "{:?}", output.content);

        let output = call(&FindTool, json!({"pattern": "*", "path": ssh}), &ctx).await;
        assert!(refused(&output, "~/.ssh"), "{:?}", output.content);
        // Over the whole home: the denied directories are left out, and said to be.
        let home = f.home.display().to_string();
        let output = call(&GrepTool, json!({"pattern": "SECRET", "path": home}), &ctx).await;
        let text = join_text(&output.content);
        assert!(
            !text.contains(KEY) && !text.contains(AWS) && text.contains("deny_read"),
            "{text}"
        );
        let output = call(&FindTool, json!({"pattern": "**/id_*", "path": home}), &ctx).await;
        let text = join_text(&output.content);
        assert!(!text.contains("id_ed25519"), "{text}");
        let output = call(
            &EditTool,
            json!({"path": ".env", "edits": [{"oldText": "SECRET", "newText": "x"}]}),
            &ctx,
        )
        .await;
        assert!(refused(&output, ".env"), "{:?}", output.content);
        let output = call(&LsTool, json!({"path": ssh}), &ctx).await;
        assert!(refused(&output, "~/.ssh"), "{:?}", output.content);
        // Names stay visible, as they are to commands.
        let output = call(&LsTool, json!({}), &ctx).await;
        assert!(
            join_text(&output.content).contains(".env\n"),
            "{:?}",
            output.content
        );
        std::fs::remove_file(f.ws.join("key-link")).ok();
        std::fs::remove_file(f.ws.join("innocent.txt")).ok();
    }
}

#[test]
fn the_default_list_covers_what_a_security_minded_user_expects() {
    let home = Path::new("/home/u");
    let agent_home = Path::new("/home/u/.config/agent");
    let deny = agent::sandbox::deny_read::DEFAULT_DENY
        .iter()
        .map(|e| entry(e, Some(home), agent_home).unwrap())
        .collect();
    let allow = DEFAULT_ALLOW
        .iter()
        .map(|e| entry(e, Some(home), agent_home).unwrap())
        .collect();
    let rules = DenyRead::new(deny, allow, Path::new("/repo")).unwrap();
    let m = rules.matcher();
    for secret in [
        "/home/u/.ssh/id_rsa",
        "/home/u/.aws/credentials",
        "/home/u/.config/gcloud/application_default_credentials.json",
        "/home/u/.gnupg/private-keys-v1.d/x.key",
        "/home/u/.netrc",
        "/home/u/.docker/config.json",
        "/home/u/.config/agent/auth.json",
        "/repo/.env",
        "/repo/api/.env.production",
    ] {
        assert!(m.denies(Path::new(secret), false).is_some(), "{secret}");
    }
    for open in [
        "/repo/.env.example",
        "/home/u/.docker/daemon.json",
        "/repo/src/env.rs",
    ] {
        assert!(m.denies(Path::new(open), false).is_none(), "{open}");
    }
}

#[tokio::test]
async fn patterns_cover_the_whole_project_when_the_agent_starts_below_its_root() {
    for user in User::both() {
        let f = fixture(user);
        support::sandbox::repository(&f.ws);
        let sub = f.ws.join("sub");
        std::fs::create_dir(&sub).unwrap();
        give(&f.ws, user);
        // deny_read's patterns are over the repository (config: tests in src/config).
        let config = SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            deny_read: deny_read(&f),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::start(&config, &sub);
        assert_eq!(sandbox.status, Status::Enforced);
        let command = "echo uid=$(id -u); cat ../svc/.env.local ../.env; grep -r SECRET ..; \
                       cat ../notes.txt; echo";
        let output = bash(user, &sub, sandbox.clone(), command).await;
        let text = text(&output);
        assert_ran_as(user, &text);
        for secret in [ENV, LOCAL] {
            assert!(!text.contains(secret), "{user:?}: {secret}:\n{text}");
        }
        assert!(text.contains("PLAIN-OK"), "{user:?}: {text}");
        let mut ctx = context(&f, sandbox);
        ctx.cwd = sub.clone();
        let output = call(
            &agent::tools::read::ReadTool,
            json!({"path": "../svc/.env.local"}),
            &ctx,
        )
        .await;
        assert!(refused(&output, ".env.*"), "{:?}", output.content);
    }
}

/// Through the real binary: `[sandbox] deny_read` and `allow_read` from config.toml reach
/// commands and tools, nothing denied reaches the model, and a bad entry is a config error
/// naming its key.
#[tokio::test]
async fn config_toml_deny_read_reaches_commands_and_tools_and_the_model_sees_no_secret() {
    use support::chat;
    use support::process::run;
    use support::server::{FakeServer, Reply};
    let env = support::env::env();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join(".env"), ENV).unwrap();
    std::fs::write(cwd.join(".env.local"), "ALLOWED-OK").unwrap();
    std::fs::create_dir(cwd.join("keys")).unwrap();
    std::fs::write(cwd.join("keys/k"), KEY).unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[sandbox]\ndeny_read = [\"keys/\"]\nallow_read = [\".env.local\"]\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "cat .env.local; echo; cat .env keys/k; true"}),
        )),
        Reply::sse(chat::tool_call("c2", "read", json!({"path": "keys/k"}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = serde_json::to_string(&server.bodies()).unwrap();
    for secret in [ENV, KEY] {
        assert!(!sent.contains(secret), "{secret} reached the model: {sent}");
    }
    assert!(sent.contains("ALLOWED-OK"), "{sent}");
    assert!(
        sent.contains("(the entry `keys/`)") && sent.contains("(the entry `.env`)"),
        "{sent}"
    );
    assert_eq!(std::fs::read_to_string(cwd.join(".env")).unwrap(), ENV);

    std::fs::write(
        env.home.path().join("config.toml"),
        "[sandbox]\ndeny_read = [\"/srv/keys\"]\nallow_read = [\"/srv/keys/public\"]\n",
    )
    .unwrap();
    let out = run(env.agent(&server, &["-p", "go"])).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("sandbox.allow_read[0]") && out.stderr.contains("`/srv/keys`"),
        "{}",
        out.stderr
    );
}
