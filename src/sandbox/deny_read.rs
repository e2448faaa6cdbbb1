//! `[sandbox] deny_read` and `allow_read`: paths neither sandboxed commands nor the agent's
//! own read/grep/find/ls may read — secrets a model has no business seeing. Two kinds of
//! entry:
//!
//! - a path (`/…` or `~/…`): that file, or that directory and everything in it;
//! - a pattern (anything else), a glob over the project's tree (the repository holding the
//!   working directory, else the working directory): without `/` it matches names at any
//!   depth (`.env*`), with one the path relative to the project's root (`config/*.key`). A pattern matches files; ending it with `/` makes it match
//!   directories instead (`secrets/`), so that `.env*` never hides a virtualenv named `.env`.
//!
//! `allow_read` lifts entries: an allowed path lifts every denied path it names or holds
//! (an allowed path inside a denied directory is refused when the config is read: a
//! command's view of a directory cannot be opened again below it); an allowed pattern
//! lifts the files it matches from the denied patterns. The defaults (`DEFAULT_DENY`,
//! `DEFAULT_ALLOW`) come first; the user's entries add to them.

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// What a security-minded user expects no command to read, the agent's own credentials
/// (`$AGENT_HOME/auth.json`), and the live sessions' sockets (`$AGENT_HOME/run`: a command
/// that reached its agent's socket could approve its own calls).
pub const DEFAULT_DENY: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.gnupg",
    "~/.netrc",
    "~/.docker/config.json",
    "$AGENT_HOME/auth.json",
    "$AGENT_HOME/run",
    ".env",
    ".env.*",
];

/// How many files the search for a hard link's other names looks at.
const HARD_LINK_SEARCH: usize = 2000;

/// Examples of environment files, committed on purpose.
pub const DEFAULT_ALLOW: &[&str] = &[".env.example", ".env.sample", ".env.template"];

/// One entry as the user wrote it, resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// As written (`~/.ssh`, `.env*`).
    pub written: String,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// An absolute path.
    Path(PathBuf),
    /// A glob over the project's tree; `dirs`: it matches directories (it ended
    /// with `/`), otherwise files.
    Pattern { glob: String, dirs: bool },
}

/// The resolved lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenyRead {
    pub deny: Vec<Entry>,
    pub allow: Vec<Entry>,
    /// The directory patterns are matched under: the project's root.
    pub cwd: PathBuf,
}

/// Resolve one entry: `~` is `home`, `$AGENT_HOME` is `agent_home`.
pub fn entry(written: &str, home: Option<&Path>, agent_home: &Path) -> Result<Entry, String> {
    let text = written.trim();
    if text.is_empty() {
        return Err("is empty: give a path or a pattern".to_string());
    }
    let kind = if let Some(rest) = text.strip_prefix("$AGENT_HOME") {
        Kind::Path(agent_home.join(rest.trim_start_matches('/')))
    } else if text == "~" || text.starts_with("~/") {
        let home = home.ok_or("names `~`, but there is no home directory (HOME)")?;
        Kind::Path(crate::tools::path::normalize(
            &home.join(text.trim_start_matches('~').trim_start_matches('/')),
        ))
    } else if text.starts_with('/') {
        Kind::Path(crate::tools::path::normalize(Path::new(text)))
    } else {
        let dirs = text.ends_with('/');
        let glob = text
            .trim_end_matches('/')
            .trim_start_matches("./")
            .to_string();
        compile(&glob).map_err(|e| format!("`{text}` is not a valid pattern: {e}"))?;
        Kind::Pattern { glob, dirs }
    };
    Ok(Entry {
        written: text.to_string(),
        kind,
    })
}

/// `glob` compiled, once per process: a matcher is made for every command the sandbox
/// starts and every file tool call, and compiling a glob (a regular expression built and
/// determinised) cost more than the rest of a command's policy (issue 32). The cache
/// holds only what the config names (the defaults and the user's entries), so it stays
/// small; a `GlobMatcher` clone shares the compiled expression.
fn compiled(glob: &str) -> Result<GlobMatcher, String> {
    static COMPILED: OnceLock<Mutex<HashMap<String, GlobMatcher>>> = OnceLock::new();
    let cache = COMPILED.get_or_init(Mutex::default);
    if let Some(matcher) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(glob)
    {
        return Ok(matcher.clone());
    }
    let matcher = compile(glob)?;
    cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(glob.to_string(), matcher.clone());
    Ok(matcher)
}

fn compile(glob: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .literal_separator(glob.contains('/'))
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

impl DenyRead {
    /// `deny` and `allow` (the defaults first, then the config's) for commands and tools
    /// working in `cwd`. `Err((index in allow, message))` for an allowed path inside a
    /// denied directory.
    pub fn new(
        deny: Vec<Entry>,
        allow: Vec<Entry>,
        cwd: &Path,
    ) -> Result<DenyRead, (usize, String)> {
        for (i, allowed) in allow.iter().enumerate() {
            let Kind::Path(inner) = &allowed.kind else {
                continue;
            };
            if let Some(outer) = deny.iter().find(|d| match &d.kind {
                Kind::Path(denied) => inner.starts_with(denied) && inner != denied,
                Kind::Pattern { .. } => false,
            }) {
                return Err((
                    i,
                    format!(
                        "lies inside `{}`, which deny_read keeps whole (commands cannot see \
                         a directory's insides again below it): allow `{}` itself, or nothing",
                        outer.written, outer.written
                    ),
                ));
            }
        }
        Ok(DenyRead {
            deny,
            allow,
            cwd: cwd.to_path_buf(),
        })
    }

    /// The lists compiled for matching.
    pub fn matcher(&self) -> Matcher {
        fn patterns(list: &[Entry]) -> Vec<Pattern> {
            list.iter()
                .filter_map(|e| match &e.kind {
                    Kind::Pattern { glob, dirs } => compiled(glob).ok().map(|matcher| Pattern {
                        written: e.written.clone(),
                        matcher,
                        dirs: *dirs,
                        whole_path: glob.contains('/'),
                    }),
                    Kind::Path(_) => None,
                })
                .collect()
        }
        // Where denied paths that are links (or lie below one) really are.
        let real_paths = self
            .deny
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::Path(path) => std::fs::canonicalize(path)
                    .ok()
                    .filter(|real| real != path)
                    .map(|real| (real, e.written.clone(), path.clone())),
                Kind::Pattern { .. } => None,
            })
            .collect();
        Matcher {
            real_paths,
            deny_patterns: patterns(&self.deny),
            allow_patterns: patterns(&self.allow),
            rules: self.clone(),
        }
    }

    /// Whether there are patterns to look for in the project's tree.
    pub fn has_patterns(&self) -> bool {
        self.deny
            .iter()
            .any(|e| matches!(e.kind, Kind::Pattern { .. }))
    }

    /// The denied paths that exist (not lifted); `matcher`: these lists' `matcher()`.
    pub fn existing_paths(&self, matcher: &Matcher) -> Vec<PathBuf> {
        self.deny
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::Path(path) => Some(path),
                Kind::Pattern { .. } => None,
            })
            .filter(|path| path.symlink_metadata().is_ok())
            .filter(|path| matcher.denies(path, path.is_dir()).is_some())
            // A link is kept where it leads (a mount over a link lands there anyway).
            .map(|path| std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
            .collect()
    }
}

/// A compiled pattern entry.
struct Pattern {
    written: String,
    matcher: GlobMatcher,
    /// It matches directories (it ended with `/`), otherwise files.
    dirs: bool,
    /// It matches the path relative to the project's root, otherwise names.
    whole_path: bool,
}

/// `DenyRead` with its patterns compiled.
pub struct Matcher {
    rules: DenyRead,
    /// For a denied path that is (or lies below) a symbolic link: where it really is, the
    /// entry as written, and the path as written.
    real_paths: Vec<(PathBuf, String, PathBuf)>,
    deny_patterns: Vec<Pattern>,
    allow_patterns: Vec<Pattern>,
}

impl Matcher {
    /// The entry (as written) that keeps `path` (absolute, normalised; `is_dir`: whether it
    /// is a directory) from being read, if any.
    pub fn denies(&self, path: &Path, is_dir: bool) -> Option<&str> {
        if let Some(entry) = self.denies_itself(path, is_dir) {
            return Some(entry);
        }
        // Inside a directory a pattern keeps (`secrets/`): commands see it empty.
        path.ancestors()
            .skip(1)
            .take_while(|dir| dir.starts_with(&self.rules.cwd) && *dir != self.rules.cwd)
            .find_map(|dir| self.pattern_denies(dir, true))
    }

    /// The same for `path` itself, leaving out that a directory a pattern keeps may hold
    /// it: for walks, which leave such a directory out before they reach what it holds.
    pub fn denies_itself(&self, path: &Path, is_dir: bool) -> Option<&str> {
        let lifted_path = |denied: &Path| {
            self.rules.allow.iter().any(|a| match &a.kind {
                Kind::Path(allowed) => denied.starts_with(allowed),
                Kind::Pattern { .. } => false,
            })
        };
        for entry in &self.rules.deny {
            if let Kind::Path(denied) = &entry.kind
                && path.starts_with(denied)
                && !lifted_path(denied)
            {
                return Some(&entry.written);
            }
        }
        for (real, written, denied) in &self.real_paths {
            if path.starts_with(real) && !lifted_path(denied) {
                return Some(written);
            }
        }
        self.pattern_denies(path, is_dir)
    }

    /// The pattern entry that keeps `path` itself, if any.
    fn pattern_denies(&self, path: &Path, is_dir: bool) -> Option<&str> {
        let relative = path.strip_prefix(&self.rules.cwd).ok()?;
        let matches = |p: &Pattern| {
            p.dirs == is_dir
                && if p.whole_path {
                    p.matcher.is_match(relative)
                } else {
                    path.file_name()
                        .is_some_and(|n| p.matcher.is_match(Path::new(n)))
                }
        };
        let denied = self.deny_patterns.iter().find(|p| matches(p))?;
        let lifted_path = self.rules.allow.iter().any(|a| match &a.kind {
            Kind::Path(allowed) => path.starts_with(allowed),
            Kind::Pattern { .. } => false,
        });
        if self.allow_patterns.iter().any(matches) || lifted_path {
            return None;
        }
        Some(&denied.written)
    }

    /// What a tool says when it is asked to read `path` (as the model named it, absolute)
    /// and `deny_read` keeps it: the path itself, where its links lead, or — for a file
    /// with other names — a denied file it is a hard link of (in a denied directory, among
    /// `known` files the patterns matched, or in the working directory).
    pub fn refuse(&self, path: &Path, known: &[PathBuf]) -> Option<String> {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let meta = std::fs::metadata(&real).ok();
        let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
        if let Some(entry) = self
            .denies(path, is_dir)
            .or_else(|| self.denies(&real, is_dir))
        {
            return Some(refusal(path, entry));
        }
        let meta = meta.filter(|m| m.is_file() && std::os::unix::fs::MetadataExt::nlink(m) > 1)?;
        let entry = self.hard_link_of(&meta, known)?;
        Some(refusal(path, &entry))
    }

    /// What a tool says when the file it opened for `path` (checked with `refuse` before)
    /// really lies where `deny_read` keeps: a link swapped in after the check. Where it is
    /// comes from `/proc/self/fd` (Linux); elsewhere only `refuse` stands.
    pub fn refuse_opened(&self, path: &Path, file: &std::fs::File) -> Option<String> {
        use std::os::fd::AsRawFd;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        let entry = self.denies(&real, false)?;
        Some(refusal(path, entry))
    }

    /// The entry denying a file that `meta` is another name of (same device and inode),
    /// searching the denied paths (at most `HARD_LINK_SEARCH` files).
    fn hard_link_of(&self, meta: &std::fs::Metadata, known: &[PathBuf]) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let same = |path: &Path| {
            path.symlink_metadata()
                .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
        };
        let here = std::fs::read_dir(&self.rules.cwd)
            .map(|entries| entries.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default();
        for path in known.iter().chain(&here) {
            if same(path)
                && let Some(entry) = self.denies(path, false)
            {
                return Some(entry.to_string());
            }
        }
        let mut budget = HARD_LINK_SEARCH;
        for entry in &self.rules.deny {
            let Kind::Path(root) = &entry.kind else {
                continue;
            };
            let mut stack = vec![root.clone()];
            while let Some(path) = stack.pop() {
                if budget == 0 {
                    return None;
                }
                budget -= 1;
                let Ok(found) = path.symlink_metadata() else {
                    continue;
                };
                if found.is_dir() {
                    if let Ok(entries) = std::fs::read_dir(&path) {
                        stack.extend(entries.flatten().map(|e| e.path()));
                    }
                } else if found.dev() == meta.dev() && found.ino() == meta.ino() {
                    return self.denies(&path, false).map(str::to_string);
                }
            }
        }
        None
    }

    /// Whether a pattern could match something in a tree (a walk need not look otherwise).
    pub fn has_patterns(&self) -> bool {
        !self.deny_patterns.is_empty()
    }
}

/// What the agent's tools say when `path` is denied by `entry`.
pub fn refusal(path: &Path, entry: &str) -> String {
    format!(
        "Refused: {} is kept from reading by `[sandbox] deny_read` (the entry `{entry}`): \
         neither commands nor the agent's tools read it. If the model should read it, the \
         user can lift it with `allow_read = [\"{entry}\"]` under [sandbox] in config.toml.",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(deny: &[&str], allow: &[&str], cwd: &Path) -> Result<DenyRead, (usize, String)> {
        let home = Path::new("/home/u");
        let agent = Path::new("/home/u/.config/agent");
        let parse = |list: &[&str]| {
            list.iter()
                .map(|e| entry(e, Some(home), agent).unwrap())
                .collect::<Vec<_>>()
        };
        DenyRead::new(parse(deny), parse(allow), cwd)
    }

    #[test]
    fn denies_paths_and_patterns_with_the_defaults_and_lifts_what_is_allowed() {
        let cwd = Path::new("/repo");
        let r = rules(DEFAULT_DENY, DEFAULT_ALLOW, cwd).unwrap();
        let m = r.matcher();
        assert_eq!(
            m.denies(Path::new("/home/u/.ssh/id_ed25519"), false),
            Some("~/.ssh")
        );
        assert_eq!(m.denies(Path::new("/home/u/.ssh"), true), Some("~/.ssh"));
        assert_eq!(
            m.denies(Path::new("/home/u/.config/agent/auth.json"), false),
            Some("$AGENT_HOME/auth.json")
        );
        assert_eq!(m.denies(Path::new("/repo/.env"), false), Some(".env"));
        assert_eq!(
            m.denies(Path::new("/repo/svc/.env.local"), false),
            Some(".env.*")
        );
        assert_eq!(m.denies(Path::new("/repo/.env.example"), false), None);
        assert_eq!(
            m.denies(Path::new("/repo/.env"), true),
            None,
            "a virtualenv named .env"
        );
        assert_eq!(m.denies(Path::new("/elsewhere/.env"), false), None);
        assert_eq!(m.denies(Path::new("/home/u/.sshx"), false), None);

        let r = rules(
            &["~/.ssh", "secrets/", "config/*.key"],
            &["~/.ssh", "config/public.key"],
            cwd,
        )
        .unwrap();
        let m = r.matcher();
        assert_eq!(m.denies(Path::new("/home/u/.ssh/id"), false), None);
        assert_eq!(
            m.denies(Path::new("/repo/a/secrets"), true),
            Some("secrets/")
        );
        assert_eq!(
            m.denies(Path::new("/repo/a/secrets/b/key"), false),
            Some("secrets/"),
            "inside a denied directory"
        );
        assert_eq!(
            m.denies(Path::new("/repo/config/private.key"), false),
            Some("config/*.key")
        );
        assert_eq!(m.denies(Path::new("/repo/config/public.key"), false), None);
        assert_eq!(
            m.denies(Path::new("/repo/a/config/private.key"), false),
            None
        );

        let inside = rules(&["~/.ssh"], &["~/.ssh/known_hosts"], cwd).unwrap_err();
        assert_eq!(inside.0, 0);
        assert!(inside.1.contains("`~/.ssh`"), "{}", inside.1);
        assert!(entry("[", None, Path::new("/h")).is_err());
        assert!(entry("~/.ssh", None, Path::new("/h")).is_err());
    }
}
