//! `[sandbox]` and `--sandbox`: the mode (the flag wins), whether sandboxed commands get
//! the network (or the hosts of `allow_hosts` through the egress proxy), the extra
//! directories they may write (`~` is the home directory, a relative path is relative to
//! the working directory), and what neither commands nor the file tools may read
//! (`deny_read` after its defaults, `allow_read`).

use super::file::SandboxTable;
use crate::sandbox::deny_read::{self, DEFAULT_ALLOW, DEFAULT_DENY, DenyRead};
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
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    let entries = |key: &str, defaults: &[&str], own: &[String]| {
        let mut entries = Vec::new();
        for text in defaults {
            // A default naming `~` without a home directory is left out.
            if let Ok(entry) = deny_read::entry(text, home.as_deref(), agent_home) {
                entries.push(entry);
            }
        }
        for (i, text) in own.iter().enumerate() {
            let entry = deny_read::entry(text, home.as_deref(), agent_home)
                .map_err(|message| (format!("sandbox.{key}[{i}]"), message))?;
            entries.push(entry);
        }
        Ok::<_, (String, String)>(entries)
    };
    let deny = entries("deny_read", DEFAULT_DENY, &table.deny_read)?;
    let allow = entries("allow_read", DEFAULT_ALLOW, &table.allow_read)?;
    // Patterns are over the project: the repository holding the working directory.
    let project = crate::repository::root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let project = std::fs::canonicalize(&project).unwrap_or(project);
    let deny_read = DenyRead::new(deny, allow, &project).map_err(|(i, message)| {
        let own = i.checked_sub(DEFAULT_ALLOW.len()).unwrap_or(i);
        (format!("sandbox.allow_read[{own}]"), message)
    })?;
    Ok(SandboxConfig {
        mode: flag.or(table.mode).unwrap_or_default(),
        network: table.network.unwrap_or(false),
        writable_roots,
        allow_hosts: table.allow_hosts.clone(),
        agent_home: Some(agent_home.to_path_buf()),
        home,
        deny_read,
        allow_local_binding: table
            .allow_local_binding
            .unwrap_or(crate::sandbox::ALLOW_LOCAL_BINDING_DEFAULT),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn deny_read_patterns_cover_the_repository_holding_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let config = resolve(
            None,
            &SandboxTable::default(),
            &root.join("a/b"),
            Path::new("/h"),
        )
        .unwrap();
        let m = config.deny_read.matcher();
        assert_eq!(m.denies(&root.join(".env"), false), Some(".env"));
        assert_eq!(m.denies(&root.join("c/.env.prod"), false), Some(".env.*"));
        assert_eq!(config.deny_read.cwd, root);
    }

    #[test]
    fn the_flag_wins_and_roots_resolve_against_the_working_directory() {
        let table = SandboxTable {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(true),
            writable_roots: vec!["cache".into(), "/opt/x".into()],
            allow_hosts: Vec::new(),
            deny_read: vec!["/srv/keys".into()],
            allow_read: vec![".env.local".into()],
            allow_local_binding: None,
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
        let m = config.deny_read.matcher();
        assert_eq!(m.denies(Path::new("/srv/keys/a"), false), Some("/srv/keys"));
        assert_eq!(
            m.denies(Path::new("/h/auth.json"), false),
            Some("$AGENT_HOME/auth.json")
        );
        assert_eq!(m.denies(Path::new("/repo/.env"), false), Some(".env"));
        assert_eq!(m.denies(Path::new("/repo/.env.local"), false), None);
        // Loopback listeners are on unless the config says otherwise.
        assert!(config.allow_local_binding);
        let off = SandboxTable {
            allow_local_binding: Some(false),
            ..SandboxTable::default()
        };
        let off = resolve(None, &off, Path::new("/repo"), Path::new("/h")).unwrap();
        assert!(!off.allow_local_binding);
        let bad = SandboxTable {
            deny_read: vec!["ok".into(), " ".into()],
            ..SandboxTable::default()
        };
        assert_eq!(
            resolve(None, &bad, Path::new("/repo"), Path::new("/h"))
                .unwrap_err()
                .0,
            "sandbox.deny_read[1]"
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

    #[test]
    fn allow_hosts_are_read_and_a_bad_one_names_its_key_and_line() {
        let text =
            "[sandbox]\nallow_hosts = [\n  \"PyPI.org\",\n  \"*.npmjs.org\",\n  \"x:8080\",\n]\n";
        let file = super::super::file::parse(text).unwrap();
        let config = resolve(None, &file.sandbox, Path::new("/repo"), Path::new("/h")).unwrap();
        let shown: Vec<String> = config.allow_hosts.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["pypi.org", "*.npmjs.org", "x:8080"]);
        let bad = "model = \"m\"\n[sandbox]\nallow_hosts = [\n  \"pypi.org\",\n  \"https://files.pythonhosted.org/\",\n]\n";
        let (key, message) = super::super::file::parse(bad).unwrap_err();
        assert_eq!(key.as_deref(), Some("sandbox.allow_hosts[1]"));
        assert!(message.contains("is not a host"), "{message}");
        assert!(message.contains("(line 5)"), "{message}");
    }
}
