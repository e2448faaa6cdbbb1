//! What front ends read of the language servers, in every build (also one without the
//! `lsp` feature, `off.rs`): a server as `/lsp` and `get_state` show it, the `details.lsp` a
//! tool result carries, and paths as the user sees them.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A configured server (and, once started, each root it serves) for `/lsp` and `get_state`.
#[derive(Clone, Debug)]
pub struct View {
    pub name: String,
    pub command: String,
    pub filetypes: Vec<String>,
    /// `disabled`, `not installed`, or a started server's status.
    pub status: String,
    pub root: Option<PathBuf>,
    pub error: Option<String>,
    pub open_files: usize,
    pub errors: usize,
    pub warnings: usize,
    /// What it reports in progress ("indexing 40%").
    pub busy: Vec<String>,
}

/// The servers as `get_state.data.lspServers`.
pub fn views_json(views: &[View]) -> Value {
    views
        .iter()
        .map(|view| {
            serde_json::json!({
                "name": view.name,
                "command": view.command,
                "filetypes": view.filetypes,
                "status": view.status,
                "root": view.root,
                "error": view.error,
                "openFiles": view.open_files,
                "errors": view.errors,
                "warnings": view.warnings,
                "busy": view.busy,
            })
        })
        .collect()
}

/// `path` as the user sees it: relative to `cwd` when inside it (`.` for `cwd` itself).
pub fn shown(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The counts of `details.lsp` of a result: `(errors, warnings)`.
pub fn counts_of(details: Option<&Value>) -> Option<(u64, u64)> {
    let lsp = details?.get("lsp")?;
    Some((lsp.get("errors")?.as_u64()?, lsp.get("warnings")?.as_u64()?))
}

/// The text of `details.lsp` of a result.
pub fn text_of(details: Option<&Value>) -> Option<&str> {
    details?.get("lsp")?.get("text")?.as_str()
}
