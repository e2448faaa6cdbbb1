//! Which paths a tree search (`grep`, `find`, `ls`) may show. A permission rule on a path
//! tool judges the path a call names; a search from the working directory names only the
//! directory, so without this a rule such as `read(secret/**)` would be walked around by
//! `grep TOKEN`. Every entry a search visits is therefore judged too: one touched by a deny
//! or ask rule of any read-only path tool (`read`, `grep`, `find`, `ls`) is left out (a
//! search cannot stop to ask about each file), and the result says how many were.

use super::identity::{File, LazyNamed, Named, mount_of};
use super::rules::{RuleSet, Target};
use super::{ALL_TOOLS, Subject};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The rules that hide paths from searches, bound to the working directory.
#[derive(Debug)]
pub struct Hidden {
    rules: RuleSet,
    /// The read-only path tools some rule restricts.
    tools: Vec<&'static str>,
    cwd: PathBuf,
}

impl Hidden {
    /// `None` when no rule restricts a read-only path tool (nothing to hide).
    pub fn from_rules(rules: &RuleSet, cwd: &Path) -> Option<Arc<Hidden>> {
        let tools: Vec<&'static str> = ALL_TOOLS
            .iter()
            .copied()
            .filter(|name| {
                super::builtin_tool(name).is_some_and(|tool| {
                    tool.read_only() && matches!(tool.subject(), Subject::Path(_))
                })
            })
            .filter(|name| rules.restricts_any_path(name))
            .collect();
        (!tools.is_empty()).then(|| {
            Arc::new(Hidden {
                rules: rules.clone(),
                tools,
                cwd: cwd.to_path_buf(),
            })
        })
    }

    /// Whether `path` (absolute, normalised) must be left out; `real` is where it really
    /// is (symbolic links followed), when the caller knows it without asking the file
    /// system.
    pub fn hides(&self, path: &Path, real: Option<&Path>) -> bool {
        let real = match real {
            Some(real) => real.to_path_buf(),
            None => self.real(path),
        };
        let target = Target::path_by_name(path, real);
        self.tools
            .iter()
            .any(|tool| self.rules.restricts_path(tool, &target))
    }

    /// The files the rules name, by device and inode, so that a search also leaves out
    /// other paths to them (hard links, bind mounts): found at most once per search, and
    /// only if a file that may have another path turns up.
    pub fn named_files(self: &Arc<Self>) -> LazyNamed {
        let hidden = self.clone();
        LazyNamed::new(&self.cwd, move || hidden.all_named())
    }

    fn all_named(&self) -> Named {
        self.rules.named_files(&self.tools)
    }

    /// Why `tool` may not read `file` although its path is not denied: it is the same file
    /// as one a deny rule names (a hard link, a bind mount).
    pub fn refuses(&self, tool: &str, shown: &str, file: &File) -> Option<String> {
        if !file.may_have_other_paths(mount_of(&self.cwd)) {
            return None;
        }
        let (rule, named) = self.rules.denied_file(tool, file)?;
        Some(format!(
            "Permission denied: {shown} is the same file as {} (a hard link or another path \
             to it), which the rule {} in the [permissions] deny list forbids. Do not try to get \
             around it.",
            super::path::display(&self.cwd, &named),
            rule.cited()
        ))
    }

    /// Where `path` really is, in the form `hides` takes.
    pub fn real(&self, path: &Path) -> PathBuf {
        super::rules::real_under(path, &self.cwd)
    }
}

/// The note a search adds when it left entries out.
pub fn hidden_note(count: usize) -> String {
    let plural = if count == 1 { "path was" } else { "paths were" };
    format!("[{count} {plural} left out: the user's [permissions] rules do not let you see them.]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(deny: &[&str], ask: &[&str], cwd: &Path) -> Option<Arc<Hidden>> {
        let own = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rules = RuleSet::parse(&[], &own(ask), &own(deny), cwd).unwrap();
        Hidden::from_rules(&rules, cwd)
    }

    #[test]
    fn read_only_path_rules_hide_paths_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        assert!(hidden(&["bash(rm *)", "write(src/**)", "read"], &[], cwd).is_none());
        let h = hidden(&["read(secret/**)"], &["find(*.pem)"], cwd).unwrap();
        assert!(h.hides(&cwd.join("secret/key"), None));
        assert!(h.hides(&cwd.join("secret/deep/key"), None));
        assert!(!h.hides(&cwd.join("secret"), None));
        assert!(h.hides(&cwd.join("server.pem"), None));
        assert!(!h.hides(&cwd.join("src/main.rs"), None));
        // A link elsewhere that leads into the secret directory is hidden too.
        std::fs::create_dir(cwd.join("secret")).unwrap();
        std::os::unix::fs::symlink(cwd.join("secret"), cwd.join("innocent")).unwrap();
        assert!(h.hides(&cwd.join("innocent/key"), None));
    }
}
