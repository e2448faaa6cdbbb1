//! What an unsandboxed hook runs. A hook with `sandbox = false` runs with the user's full
//! rights, and its command often names a script in the workspace (`sh ./check.sh`) — a file
//! the agent's sandboxed commands may rewrite. So the content of every file its command
//! names in a place sandboxed commands can write (the project, the working directory, the
//! temp directory) is pinned: hashed when the hooks are loaded (for a project's hooks, that
//! hash is part of what the user trusts), and checked again right before each run; a hook
//! whose files changed is not run.
//!
//! Only files the command names itself are covered — not what those files read or run in
//! turn (`. ./lib.sh`, `npm run lint`'s package.json): docs/security.md says so.

use ring::digest;
use std::path::{Path, PathBuf};

/// One file an unsandboxed hook names, and the SHA-256 of its content when pinned (`None`:
/// it could not be read then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub path: PathBuf,
    pub sha256: Option<String>,
}

/// The files `command` names (as words of the shell command, with `$AGENT_PROJECT_DIR`,
/// `$CLAUDE_PROJECT_DIR` and `~` expanded, relative ones from `cwd`) that exist and lie where
/// sandboxed commands can write: under `project`, `cwd` or the temp directory.
pub fn named_files(command: &str, cwd: &Path, project: &Path) -> Vec<PathBuf> {
    let words = shell_words::split(command)
        .unwrap_or_else(|_| command.split_whitespace().map(str::to_string).collect());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let writable = [
        canonical(project),
        canonical(cwd),
        canonical(&std::env::temp_dir()),
    ];
    let mut files: Vec<PathBuf> = Vec::new();
    for word in &words {
        // `--config=./x.toml` names a file after its `=`; redirections after their sign.
        let candidates = [
            Some(word.as_str()),
            word.rsplit_once('=').map(|(_, after)| after),
            word.strip_prefix(['<', '>']),
        ];
        for candidate in candidates.into_iter().flatten() {
            let Some(path) = expand(candidate, cwd, project, home.as_deref()) else {
                continue;
            };
            if !path.is_file() {
                continue;
            }
            let real = canonical(&path);
            if writable.iter().any(|root| real.starts_with(root)) && !files.contains(&path) {
                files.push(path);
            }
        }
    }
    files
}

/// Pin the files `command` names.
pub fn pin(command: &str, cwd: &Path, project: &Path) -> Vec<Pin> {
    named_files(command, cwd, project)
        .into_iter()
        .map(|path| Pin {
            sha256: sha256_of(&path),
            path,
        })
        .collect()
}

/// The first pinned file whose content is no longer what was pinned.
pub fn changed(pins: &[Pin]) -> Option<&Path> {
    pins.iter()
        .find(|pin| sha256_of(&pin.path) != pin.sha256)
        .map(|pin| pin.path.as_path())
}

fn expand(word: &str, cwd: &Path, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if word.is_empty() || word.starts_with('-') {
        return None;
    }
    for variable in ["AGENT_PROJECT_DIR", "CLAUDE_PROJECT_DIR"] {
        for form in [format!("${variable}"), format!("${{{variable}}}")] {
            if let Some(rest) = word.strip_prefix(&form) {
                return Some(project.join(rest.trim_start_matches('/')));
            }
        }
    }
    if let Some(rest) = word.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    if word.contains('$') {
        return None;
    }
    Some(cwd.join(word))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn sha256_of(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(hex(digest::digest(&digest::SHA256, &bytes).as_ref()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_the_command_names_in_the_workspace_are_pinned_and_changes_seen() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("check.sh"), "exit 0\n").unwrap();
        std::fs::write(root.join("scripts/lint.py"), "print()\n").unwrap();
        std::fs::write(root.join("conf.toml"), "x = 1\n").unwrap();
        let command = "sh ./check.sh && python3 \"$CLAUDE_PROJECT_DIR\"/scripts/lint.py \
                       --config=conf.toml /bin/sh missing.sh";
        let files = named_files(command, root, root);
        assert_eq!(
            files,
            [
                root.join("./check.sh"),
                root.join("scripts/lint.py"),
                root.join("conf.toml"),
            ],
            "workspace files only: not /bin/sh, not a missing one"
        );
        let pins = pin(command, root, root);
        assert_eq!(changed(&pins), None);
        std::fs::write(root.join("scripts/lint.py"), "import os\n").unwrap();
        assert_eq!(changed(&pins), Some(root.join("scripts/lint.py").as_path()));
    }
}
