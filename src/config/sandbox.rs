//! `[sandbox]` and `--sandbox`: the mode (the flag wins), whether sandboxed commands get
//! the network (or the hosts of `allow_hosts` through the egress proxy), and the extra
//! directories they may write (`~` is the home directory, a relative path is relative to
//! the working directory).

use super::file::SandboxTable;
use crate::sandbox::{SandboxConfig, SandboxMode};
use std::path::Path;

pub fn resolve(
    flag: Option<SandboxMode>,
    table: &SandboxTable,
    cwd: &Path,
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
        allow_hosts: table.allow_hosts.clone(),
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
            allow_hosts: Vec::new(),
        };
        let config = resolve(Some(SandboxMode::Off), &table, Path::new("/repo")).unwrap();
        assert_eq!(config.mode, SandboxMode::Off);
        assert!(config.network);
        assert_eq!(
            config.writable_roots,
            [PathBuf::from("/repo/cache"), PathBuf::from("/opt/x")]
        );
        let config = resolve(None, &SandboxTable::default(), Path::new("/repo")).unwrap();
        assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
        assert!(!config.network);
        let root = SandboxTable {
            writable_roots: vec!["/".into()],
            ..SandboxTable::default()
        };
        assert_eq!(
            resolve(None, &root, Path::new("/repo")).unwrap_err().0,
            "sandbox.writable_roots[0]"
        );
    }

    #[test]
    fn allow_hosts_are_read_and_a_bad_one_names_its_key_and_line() {
        let text =
            "[sandbox]\nallow_hosts = [\n  \"PyPI.org\",\n  \"*.npmjs.org\",\n  \"x:8080\",\n]\n";
        let file = super::super::file::parse(text).unwrap();
        let config = resolve(None, &file.sandbox, Path::new("/repo")).unwrap();
        let shown: Vec<String> = config.allow_hosts.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["pypi.org", "*.npmjs.org", "x:8080"]);
        let bad = "model = \"m\"\n[sandbox]\nallow_hosts = [\n  \"pypi.org\",\n  \"https://files.pythonhosted.org/\",\n]\n";
        let (key, message) = super::super::file::parse(bad).unwrap_err();
        assert_eq!(key.as_deref(), Some("sandbox.allow_hosts[1]"));
        assert!(message.contains("is not a host"), "{message}");
        assert!(message.contains("(line 5)"), "{message}");
    }
}
