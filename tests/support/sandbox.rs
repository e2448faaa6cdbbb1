//! Running commands as a hostile model's `bash` calls would, below the real supervisor and
//! the real sandbox: as this test's user (root on the build machines) or as an
//! unprivileged one (uid/gid 65534 through `setpriv`, so the sandbox takes its
//! user-namespace path).

use agent::protocol::message::join_text;
use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status};
use agent::tools::{Tool, ToolContext, ToolOutput};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

/// Who the command runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The test's own user.
    Me,
    /// uid and gid 65534, no groups.
    Nobody,
}

pub const NOBODY: u32 = 65534;

impl User {
    /// Both, where the sandbox's path differs: as root it mounts directly, otherwise inside
    /// a user namespace.
    pub fn both() -> Vec<User> {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } == 0 {
            vec![User::Me, User::Nobody]
        } else {
            vec![User::Me]
        }
    }
}

/// A directory outside the system temp directory (which sandboxed commands may write),
/// open to `user`.
pub fn scratch(user: User) -> TempDir {
    let dir = outside();
    give(dir.path(), user);
    dir
}

/// A directory no workspace-write sandbox may write unless it is the workspace: outside
/// the system temp directory and `/dev/shm`, which are writable roots of every such
/// sandbox. In the target's temp directory, unless that lies in one of them (a target
/// directory under /tmp, or `TMPDIR` above the checkout): then in `/var/tmp`, or else in
/// the home directory.
pub fn outside() -> TempDir {
    tempfile::tempdir_in(outside_base()).unwrap()
}

fn outside_base() -> PathBuf {
    let real = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    let writable = [std::env::temp_dir(), PathBuf::from("/dev/shm")].map(real);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        home,
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|dir| dir.is_dir())
        .map(real)
        .find(|dir| !writable.iter().any(|w| dir.starts_with(w)))
        .unwrap_or_else(|| {
            panic!(
                "no directory outside the sandbox's writable roots ({writable:?}) to test \
                 with: the target's temp directory, /var/tmp and $HOME all lie in them"
            )
        })
}

/// A directory in the system temp directory (a writable root), open to `user`.
pub fn temp(user: User) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    give(dir.path(), user);
    dir
}

/// Let `user` write `path` (and everything under it).
pub fn give(path: &Path, user: User) {
    if user == User::Nobody {
        std::process::Command::new("chown")
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(path)
            .status()
            .unwrap();
    }
}

pub fn config(network: bool) -> SandboxConfig {
    SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        network,
        ..SandboxConfig::default()
    }
}

/// The workspace-write sandbox for `cwd`, enforced.
pub fn sandbox(cwd: &Path, config: &SandboxConfig) -> Sandbox {
    let sandbox = Sandbox::start(config, cwd);
    assert_eq!(
        sandbox.status,
        Status::Enforced,
        "this machine has Landlock"
    );
    sandbox
}

/// A supervisor that runs the agent's supervisor as `user`.
fn supervisor(user: User) -> PathBuf {
    let agent = PathBuf::from(env!("CARGO_BIN_EXE_agent"));
    match user {
        User::Me => agent,
        User::Nobody => {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("as-nobody");
            std::fs::create_dir_all(&dir).unwrap();
            let script = dir.join(format!("supervisor-{}", std::process::id()));
            if !script.exists() {
                let partial = dir.join(format!(".supervisor-{}", fastrand::u64(..)));
                std::fs::write(
                    &partial,
                    format!(
                        "#!/bin/sh\nexec setpriv --reuid={NOBODY} --regid={NOBODY} \
                         --clear-groups -- '{}' \"$@\"\n",
                        agent.display()
                    ),
                )
                .unwrap();
                std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::rename(&partial, &script).unwrap();
            }
            script
        }
    }
}

/// Run `command` with the bash tool in `cwd` under `sandbox`, as `user`.
pub async fn bash(user: User, cwd: &Path, sandbox: Sandbox, command: &str) -> ToolOutput {
    let ctx = context(user, cwd, sandbox);
    agent::tools::bash::BashTool
        .execute(json!({ "command": command }), ctx)
        .await
}

/// What the tools need to run commands in `cwd` under `sandbox` as `user` (clones share
/// their background shells).
pub fn context(user: User, cwd: &Path, sandbox: Sandbox) -> ToolContext {
    let mut settings = super::harness::tool_settings();
    settings.sandbox = sandbox;
    settings.supervisor = supervisor(user);
    ToolContext {
        tool_call_id: String::new(),
        cwd: cwd.to_path_buf(),
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

/// The command printed `uid=N` (`echo uid=$(id -u)`) with `user`'s uid.
pub fn assert_ran_as(user: User, text: &str) {
    // SAFETY: getuid has no preconditions.
    let uid = match user {
        User::Me => unsafe { libc::getuid() },
        User::Nobody => NOBODY,
    };
    assert!(text.contains(&format!("uid={uid}\n")), "{user:?}: {text}");
}

pub fn text(output: &ToolOutput) -> String {
    join_text(&output.content)
}

/// The boundary the result names (`details.sandbox.blocked`).
pub fn blocked(output: &ToolOutput) -> Option<String> {
    output
        .details
        .as_ref()?
        .pointer("/sandbox/blocked")?
        .as_str()
        .map(str::to_string)
}

/// Run `git ARGS` in `dir` outside the sandbox, as the user would; its output.
pub fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap()
}

/// A git repository in `dir` with one commit.
pub fn repository(dir: &Path) {
    assert!(git(dir, &["init", "-q", "-b", "main"]).status.success());
    std::fs::write(dir.join("README"), "hi\n").unwrap();
    for args in [&["add", "README"][..], &["commit", "-qm", "first"]] {
        let out = git(dir, args);
        assert!(out.status.success(), "{out:?}");
    }
}
