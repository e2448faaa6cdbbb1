//! `agent config init [--force]` and `agent config path`: an installed agent has no
//! config.example.toml beside it, so `init` writes that commented text (every key, all
//! commented out: the file changes nothing until a line is uncommented) where the agent
//! reads its configuration, and `path` says where that is (`--config FILE` when given).

use crate::cli::ConfigAction;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The commented configuration `init` writes (the repository's config.example.toml).
pub const EXAMPLE: &str = include_str!("../config.example.toml");

/// Run the subcommand; the exit code (0 done, 1 failed).
pub fn run(action: &ConfigAction, config: Option<&Path>) -> u8 {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None => match crate::config::paths() {
            Ok(paths) => paths.config_file,
            Err(e) => {
                eprintln!("agent: {e}");
                return 1;
            }
        },
    };
    match action {
        ConfigAction::Path => {
            println!("{}", path.display());
            0
        }
        ConfigAction::Init { force } => match init(&path, *force) {
            Ok(()) => {
                println!(
                    "Wrote {} (every key commented out, with its default).",
                    path.display()
                );
                0
            }
            Err(why) => {
                eprintln!("agent: {why}");
                1
            }
        },
    }
}

/// Write `EXAMPLE` to `path` (0600, its directory made 0700 when missing); an existing
/// file is left alone unless `force`, and then replaced whole (written beside, renamed).
fn init(path: &Path, force: bool) -> Result<(), String> {
    let exists = path.symlink_metadata().is_ok();
    if exists && !force {
        return Err(format!(
            "{} already exists; `agent config init --force` replaces it",
            path.display()
        ));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    if !exists {
        // Exclusive: a file that appeared meanwhile is not overwritten.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        return file
            .write_all(EXAMPLE.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()));
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".config-")
        .tempfile_in(&dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    temp.write_all(EXAMPLE.as_bytes())
        .and_then(|()| {
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o600))
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    temp.persist(path)
        .map_err(|e| format!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_written_text_is_a_valid_config_that_sets_nothing() {
        let parsed: toml::Table = toml::from_str(super::EXAMPLE).unwrap();
        assert!(parsed.is_empty(), "{parsed:?}");
    }
}
