//! The `git` the agent runs itself (the `/diff` baseline and diff), outside the sandbox:
//! it must never run what a sandboxed command could have written — a repository's config
//! (fsmonitor, hooks path, pager, diff and filter drivers, ssh and credential programs…),
//! its hooks, its attributes — nor use a repository planted between the working directory
//! and the one the agent started with. So every invocation:
//!
//! - names the repository found at start (`--git-dir`, `--work-tree`): no search upward;
//! - reads neither the system nor the global config, and none of the git variables of the
//!   agent's environment that name repositories, programs or config;
//! - overrides every key that names a program (`SAFE_CONFIG`) and blanks every filter
//!   driver the repository's config defines (their names are free, so they are read first,
//!   and passed through `GIT_CONFIG_KEY_n`, where no `=` in a name can cut a key short);
//! - takes no optional locks (no index write, so no index hook), fetches nothing (no lazy
//!   fetch in a partial clone: `protocol.allow=never`), asks nothing, pages nothing.

use std::path::{Path, PathBuf};
use tokio::process::Command;

/// `-c` overrides for every key that names a program git may run, or makes it look
/// elsewhere for one.
pub const SAFE_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "core.askPass=false",
    "core.sshCommand=false",
    "core.gitProxy=",
    "core.alternateRefsCommand=",
    "core.attributesFile=/dev/null",
    "sequence.editor=false",
    "diff.external=",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "credential.helper=",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "protocol.allow=never",
    "safe.directory=*",
];

/// Environment variables of the agent's that would point git at other repositories,
/// config or programs.
const UNSET: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_TEMPLATE_DIR",
    "GIT_ATTR_SOURCE",
    "GIT_EXEC_PATH",
];

/// The repository the agent's git works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
}

/// A `git` command with the safe environment and overrides, but no repository named.
fn base(cwd: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        // The baseline is a commit object nobody sees; its author is the agent.
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@localhost")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@localhost");
    for name in UNSET {
        command.env_remove(name);
    }
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("GIT_CONFIG_KEY_") || name.starts_with("GIT_CONFIG_VALUE_") {
            command.env_remove(name.as_ref());
        }
    }
    command.arg("--no-pager");
    for setting in SAFE_CONFIG {
        command.args(["-c", setting]);
    }
    command
}

async fn output(mut command: Command) -> Result<String, String> {
    let output = command
        .output()
        .await
        .map_err(|e| format!("git could not be run: {e}"))?;
    if !output.status.success() {
        let error = String::from_utf8_lossy(&output.stderr);
        return Err(error.lines().next().unwrap_or("git failed").to_string());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_string())
}

/// The repository holding `cwd`, found once (at start, before any command ran).
pub async fn find(cwd: &Path) -> Result<Repository, String> {
    let mut command = base(cwd);
    command.args(["rev-parse", "--absolute-git-dir", "--show-toplevel"]);
    let text = output(command).await?;
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(git_dir), Some(work_tree)) => Ok(Repository {
            git_dir: PathBuf::from(git_dir),
            work_tree: PathBuf::from(work_tree),
        }),
        _ => Err("not in a git work tree".to_string()),
    }
}

/// Run `git ARGS` on `repository`; its output, or the first line of its error.
pub async fn run(repository: &Repository, args: &[&str]) -> Result<String, String> {
    let filters = filter_settings(repository).await;
    let mut command = on(repository);
    // Through the environment, where a key cannot be cut short by an `=` in a name.
    command.env("GIT_CONFIG_COUNT", filters.len().to_string());
    for (i, (key, value)) in filters.iter().enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{i}"), key);
        command.env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    command.args(args);
    output(command).await
}

/// `base` on `repository`.
fn on(repository: &Repository) -> Command {
    let mut command = base(&repository.work_tree);
    command
        .arg("--git-dir")
        .arg(&repository.git_dir)
        .arg("--work-tree")
        .arg(&repository.work_tree);
    command
}

/// Settings blanking each filter driver the repository's config (and what it includes)
/// defines: `filter.NAME.clean` = "" …, `filter.NAME.required` = false.
async fn filter_settings(repository: &Repository) -> Vec<(String, String)> {
    let mut command = on(repository);
    command.args(["config", "-z", "--name-only", "--get-regexp", r"^filter\."]);
    let names = output(command).await.unwrap_or_default();
    let mut settings = Vec::new();
    for key in names.split('\0') {
        let Some((driver, _)) = key
            .strip_prefix("filter.")
            .and_then(|rest| rest.rsplit_once('.'))
        else {
            continue;
        };
        for (field, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            let setting = (format!("filter.{driver}.{field}"), value.to_string());
            if !settings.contains(&setting) {
                settings.push(setting);
            }
        }
    }
    settings
}
