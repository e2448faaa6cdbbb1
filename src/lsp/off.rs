//! `Lsp` in a build without the `lsp` feature: the same face, no client. No server starts,
//! the `lsp` tool is not offered (asking for it by name says which feature brings it), a
//! change waits for no diagnostics, and `/lsp` and `get_state` list the configured servers
//! as not in this build, naming the feature to rebuild with.

use crate::config::lsp::LspSettings;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[path = "view.rs"]
pub mod view;
pub use view::{View, views_json};

pub struct Lsp {
    settings: LspSettings,
    cwd: PathBuf,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp").field("built", &false).finish()
    }
}

impl Lsp {
    pub fn new(settings: LspSettings, cwd: PathBuf, _hidden_env: Vec<String>) -> Arc<Lsp> {
        Arc::new(Lsp {
            settings,
            cwd,
            changes: watch::Sender::new(0),
        })
    }

    pub fn available(&self) -> bool {
        false
    }

    pub fn wait(&self) -> Duration {
        Duration::ZERO
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn serves(&self, _path: &Path) -> bool {
        false
    }

    pub fn touch(&self, _path: PathBuf) {}

    pub async fn after_change(
        &self,
        _paths: &[PathBuf],
        _cancel: &CancellationToken,
    ) -> Vec<report::FileReport> {
        Vec::new()
    }

    pub async fn after_command(&self, _cancel: &CancellationToken) -> Vec<report::FileReport> {
        Vec::new()
    }

    /// Every configured server, as not in this build.
    pub fn views(&self) -> Vec<View> {
        let status = crate::features::LSP.missing();
        self.settings
            .servers
            .iter()
            .map(|spec| View {
                name: spec.name.clone(),
                command: spec.command.clone(),
                filetypes: spec.filetypes.clone(),
                status: status.clone(),
                root: None,
                error: None,
                open_files: 0,
                errors: 0,
                warnings: 0,
                busy: Vec::new(),
            })
            .collect()
    }

    pub fn totals(&self) -> Option<(usize, usize)> {
        None
    }

    pub async fn shut_down(&self) {}
}

/// Diagnostics reports: none are made in this build.
pub mod report {
    pub use super::view::{counts_of, text_of};
    use std::path::Path;

    /// What one server said of one file: never anything here.
    #[derive(Clone, Debug, PartialEq)]
    pub enum FileReport {}

    pub fn attach(_output: &mut crate::tools::ToolOutput, _reports: &[FileReport], _cwd: &Path) {}
}

pub mod location {
    pub use super::view::shown;
}
