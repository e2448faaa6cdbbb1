//! `[sandbox]` and `--sandbox`: the mode (the flag wins), whether sandboxed commands get
//! the network, and the extra directories they may write (`~` is the home directory, a
//! relative path is relative to the working directory).

use super::file::SandboxTable;
use crate::sandbox::{SandboxConfig, SandboxMode};
use std::path::Path;

pub fn resolve(
    flag: Option<SandboxMode>,
    table: &SandboxTable,
    cwd: &Path,
    agent_home: &Path,
) -> Result<SandboxConfig, (String, String)> {
    let mut writable_roots = Vec::new();
    for (i, root) in table.writable_roots.iter().enumerate() {
        if root.trim().is_empty() {
            return Err((
                format!("sandbox.writable_roots[{i}]"),
                "is empty: give a directory".to_string(),
            ));
        }
        let path = crate::tools::path::resolve(cwd, root.trim());
        if path == Path::new("/") {
            return Err((
                format!("sandbox.writable_roots[{i}]"),
                "`/` would let commands write everywhere: use `--sandbox off` for that".to_string(),
            ));
        }
        writable_roots.push(path);
    }
    Ok(SandboxConfig {
        mode: flag.or(table.mode).unwrap_or_default(),
        network: table.network.unwrap_or(false),
        writable_roots,
        agent_home: Some(agent_home.to_path_buf()),
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(std::path::PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_flag_wins_and_roots_resolve_against_the_working_directory() {
        let table = SandboxTable {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(true),
            writable_roots: vec!["cache".into(), "/opt/x".into()],
        };
        let config = resolve(
            Some(SandboxMode::Off),
            &table,
            Path::new("/repo"),
            Path::new("/h"),
        )
        .unwrap();
        assert_eq!(config.mode, SandboxMode::Off);
        assert!(config.network);
        assert_eq!(
            config.writable_roots,
            [PathBuf::from("/repo/cache"), PathBuf::from("/opt/x")]
        );
        let config = resolve(
            None,
            &SandboxTable::default(),
            Path::new("/repo"),
            Path::new("/h"),
        )
        .unwrap();
        assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
        assert!(!config.network);
        let root = SandboxTable {
            writable_roots: vec!["/".into()],
            ..SandboxTable::default()
        };
        assert_eq!(
            resolve(None, &root, Path::new("/repo"), Path::new("/h"))
                .unwrap_err()
                .0,
            "sandbox.writable_roots[0]"
        );
    }
}
