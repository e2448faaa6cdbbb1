//! Project instructions for the model: AGENTS.md files (CLAUDE.md where a directory has no
//! AGENTS.md) — the global one in the agent's home, then from the repository root down to
//! the working directory, in that order — concatenated and capped in size. They are part of
//! the system prompt, so they are sent with every request, also after a compaction.

use std::path::{Path, PathBuf};

/// Total size of all context files the prompt carries.
pub const MAX_TOTAL_BYTES: usize = 64 * 1024;

#[derive(Clone, Debug, PartialEq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

pub fn load(home: &Path, cwd: &Path) -> Vec<ContextFile> {
    let mut dirs = vec![home.to_path_buf()];
    dirs.extend(project_dirs(cwd));
    let mut files = Vec::new();
    let mut budget = MAX_TOTAL_BYTES;
    for dir in dirs {
        let Some(path) = ["AGENTS.md", "CLAUDE.md"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
        else {
            continue;
        };
        if files.iter().any(|f: &ContextFile| f.path == path) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        let content = if text.len() > budget {
            format!(
                "{}\n[… cut: the context files exceed {} KB]",
                crate::tools::truncate::clip(&text, budget),
                MAX_TOTAL_BYTES / 1024
            )
        } else {
            text.into_owned()
        };
        budget = budget.saturating_sub(content.len());
        files.push(ContextFile { path, content });
        if budget == 0 {
            break;
        }
    }
    files
}

/// The repository root down to `cwd`; just `cwd` outside a repository.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = crate::repository::dirs_up_to_root(cwd);
    dirs.reverse();
    dirs
}

/// The files as a system-prompt section.
pub fn render(files: &[ContextFile]) -> String {
    let mut text = String::from(
        "# Project instructions\n\nFollow these instructions from the user's context files.",
    );
    for file in files {
        text.push_str(&format!(
            "\n\n## {}\n\n{}",
            file.path.display(),
            file.content.trim_end()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_then_root_down_to_cwd_with_claude_md_as_fallback() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let sub = repo.path().join("crates/core");
        std::fs::create_dir_all(&sub).unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::write(home.path().join("AGENTS.md"), "global rules").unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(repo.path().join("CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
        std::fs::write(repo.path().join("crates/CLAUDE.md"), "crates rules").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "core rules").unwrap();
        let files = load(home.path(), &sub);
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            contents,
            ["global rules", "root rules", "crates rules", "core rules"]
        );
        let rendered = render(&files);
        assert!(rendered.find("global rules") < rendered.find("core rules"));
    }

    #[test]
    fn the_total_is_capped() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            cwd.path().join("AGENTS.md"),
            "x".repeat(MAX_TOTAL_BYTES * 2),
        )
        .unwrap();
        let files = load(home.path(), cwd.path());
        assert!(files[0].content.len() < MAX_TOTAL_BYTES + 100);
        assert!(files[0].content.ends_with("KB]"));
    }
}
