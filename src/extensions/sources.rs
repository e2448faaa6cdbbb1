//! Where commands and skills are looked for, in precedence order: the project's `.agent/`
//! then `.claude/` folders (from the working directory up to the repository root, nearest
//! first), then the user's `$AGENT_HOME`.

use std::path::{Path, PathBuf};

/// Whose a command or skill is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Project,
    User,
}

impl Origin {
    pub fn label(self) -> &'static str {
        match self {
            Origin::Project => "project",
            Origin::User => "user",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchDir {
    pub path: PathBuf,
    pub origin: Origin,
}

/// The folders named `kind` (`commands`, `skills`) to search, first one wins.
pub fn search_dirs(home: &Path, cwd: &Path, kind: &str) -> Vec<SearchDir> {
    let mut dirs = Vec::new();
    for project in project_dirs(cwd) {
        for hidden in [".agent", ".claude"] {
            let path = project.join(hidden).join(kind);
            // The user's home may be an ancestor of the project: its `.agent` is not the
            // project's.
            if path.is_dir() && !path.starts_with(home.join(kind)) {
                dirs.push(SearchDir {
                    path,
                    origin: Origin::Project,
                });
            }
        }
    }
    let user = home.join(kind);
    if user.is_dir() && !dirs.iter().any(|d| d.path == user) {
        dirs.push(SearchDir {
            path: user,
            origin: Origin::User,
        });
    }
    dirs
}

/// The working directory and its ancestors up to the repository root, nearest first.
pub fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    crate::repository::dirs_up_to_root(cwd)
}

/// The project root: the repository root, or the working directory outside one.
pub fn project_root(cwd: &Path) -> PathBuf {
    project_dirs(cwd).pop().unwrap_or_else(|| cwd.to_path_buf())
}
