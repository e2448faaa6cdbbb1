//! Permission rules from `[permissions]`: `tool` (the whole tool), `bash(pattern)` (a
//! command pattern where `*` matches anything) and `read(glob)` / `write(glob)` /
//! `edit(glob)` / `grep(glob)` / `find(glob)` / `ls(glob)` (a path glob, relative to the
//! working directory) — which kind of pattern a tool takes is its `Subject`. MCP tools
//! (`mcp__server__tool`) are named with `*` wildcards (`mcp__docs__*`), since which tools
//! a server offers is only known once it runs. Parsing
//! reports a bad rule with the config key it came from; matching answers "does this rule
//! cover this call".

mod suggest;

use super::shell::{self, CommandShape, Segment};
use super::source::MCP_TOOL_PREFIX;
use super::{Subject, Tool, identity};
use crate::protocol::message::ToolCall;
use globset::{GlobBuilder, GlobMatcher};
use std::fmt;
use std::path::{Path, PathBuf};
pub use suggest::{split_rules, suggest};

#[derive(Clone, Debug)]
pub struct Rule {
    tool: String,
    pattern: Pattern,
    /// As written in the config, for messages.
    text: String,
    /// Where it was written (`/home/u/.config/agent/config.toml:14`), when known.
    source: Option<String>,
}

#[derive(Clone, Debug)]
enum Pattern {
    /// Every call of the tool.
    Whole,
    /// A bash command pattern, whitespace collapsed.
    Command(String),
    /// An absolute path glob.
    Path(GlobMatcher),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A rule that could not be parsed: the config key (`permissions.allow[2]`) and why.
#[derive(Debug, PartialEq)]
pub struct RuleError {
    pub key: String,
    pub message: String,
}

impl Rule {
    /// Parse `text`; relative path globs are anchored at `cwd`.
    pub fn parse(text: &str, cwd: &Path) -> Result<Rule, String> {
        let trimmed = text.trim();
        let (tool, pattern) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(format!("`{trimmed}` has no closing parenthesis"));
                };
                (tool.trim(), Some(inner.trim()))
            }
        };
        let subject = match super::builtin_tool(tool) {
            Some(builtin) => builtin.subject(),
            None if is_mcp_tool_pattern(tool) => Subject::None,
            None => {
                if let Some(feature) = crate::features::tool_left_out(tool) {
                    return Err(format!("`{trimmed}`: {}", feature.missing()));
                }
                return Err(format!(
                    "`{trimmed}` names no tool (known: {}, and MCP tools as `{MCP_TOOL_PREFIX}server__tool`, \
                     where `*` matches anything)",
                    super::ALL_TOOLS.join(", ")
                ));
            }
        };
        let pattern = match (pattern, subject) {
            (None, _) => Pattern::Whole,
            (Some(""), _) => return Err(format!("`{trimmed}` has an empty pattern")),
            (Some(inner), Subject::Command(_)) => Pattern::Command(collapse(inner)),
            (Some(inner), Subject::Path(_)) => Pattern::Path(path_glob(inner, cwd)?),
            (Some(_), Subject::None) => {
                return Err(format!(
                    "`{trimmed}`: `{tool}` rules take no pattern; write just `{tool}`"
                ));
            }
        };
        Ok(Rule {
            tool: tool.to_string(),
            pattern,
            text: trimmed.to_string(),
            source: None,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where it was written, when known.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// `` `bash(rm -rf *)` (config.toml:14) ``: the rule and where it comes from.
    pub fn cited(&self) -> String {
        match &self.source {
            Some(source) => format!("`{}` ({source})", self.text),
            None => format!("`{}`", self.text),
        }
    }

    /// The part of the call the rule matched: the command segment, or the path.
    pub fn matched_part(&self, target: &Target) -> Option<String> {
        match (&self.pattern, target) {
            (Pattern::Command(pattern), Target::Command { text, shape }) => shape
                .as_ref()
                .and_then(|shape| {
                    shape
                        .segments
                        .iter()
                        .find(|s| spelled_as(pattern, s))
                        .map(|s| s.text.clone())
                })
                .or_else(|| Some(text.clone())),
            (_, Target::Command { text, .. }) => Some(text.clone()),
            (Pattern::Path(glob), Target::Path { path, real, file }) => {
                let shown = path.display().to_string();
                if glob.is_match(path) || glob.is_match(real) {
                    return Some(shown);
                }
                match file.as_ref().and_then(|file| self.same_file(file)) {
                    Some(named) => Some(format!(
                        "{shown}, the same file as {} (a hard link or another path to it)",
                        named.display()
                    )),
                    None => Some(shown),
                }
            }
            (_, Target::Path { path, .. }) => Some(path.display().to_string()),
            _ => None,
        }
    }

    /// Whether the rule covers the whole call of `tool` (for allow: every part of a
    /// command must be covered, see `RuleSet::allows`).
    fn covers(&self, tool: &str, target: &Target) -> bool {
        if !self.names(tool) {
            return false;
        }
        match (&self.pattern, target) {
            (Pattern::Whole, _) => true,
            (Pattern::Command(pattern), Target::Command { text, .. }) => wildcard(pattern, text),
            // Both the path as given and where its symlinks lead must be covered.
            (Pattern::Path(glob), Target::Path { path, real, .. }) => {
                glob.is_match(path) && glob.is_match(real)
            }
            _ => false,
        }
    }

    /// Whether the rule covers some part of the call of `tool`: the whole command or one
    /// of its segments however it is spelled, or the path by any of its names (for deny
    /// and ask).
    fn touches(&self, tool: &str, target: &Target) -> bool {
        if self.covers(tool, target) {
            return true;
        }
        if !self.names(tool) {
            return false;
        }
        match (&self.pattern, target) {
            (
                Pattern::Command(pattern),
                Target::Command {
                    shape: Some(shape), ..
                },
            ) => shape.segments.iter().any(|s| spelled_as(pattern, s)),
            // bash runs the lines before a syntax error, so a command that does not parse
            // is touched by a pattern found anywhere in it.
            (Pattern::Command(pattern), Target::Command { text, shape: None }) => {
                wildcard(&format!("*{pattern}"), text)
            }
            // A path reached through a symlink is touched by rules on either name, and a
            // file by rules on any path to it (a hard link, a bind mount).
            (Pattern::Path(glob), Target::Path { path, real, file }) => {
                glob.is_match(path)
                    || glob.is_match(real)
                    || file
                        .as_ref()
                        .is_some_and(|file| self.same_file(file).is_some())
            }
            _ => false,
        }
    }

    /// A path this rule names that is the same file as `file` (device and inode), if any.
    fn same_file(&self, file: &identity::File) -> Option<PathBuf> {
        let Pattern::Path(glob) = &self.pattern else {
            return None;
        };
        identity::Named::by(glob).path_of(file)
    }

    /// The files this rule names, by device and inode (for a path rule).
    pub fn named_files(&self) -> Option<identity::Named> {
        match &self.pattern {
            Pattern::Path(glob) => Some(identity::Named::by(glob)),
            _ => None,
        }
    }
}

/// Whether a command pattern matches a segment however it is spelled (for deny and ask).
fn spelled_as(pattern: &str, segment: &Segment) -> bool {
    segment.all_spellings().any(|s| wildcard(pattern, s))
}

/// Whether an allow pattern covers a segment: it matches the command (as bash will run it,
/// or as written), and names every variable given to it that changes what runs.
fn allows_segment(pattern: &str, segment: &Segment) -> bool {
    let matches = wildcard(pattern, &segment.text)
        || segment
            .raw
            .as_ref()
            .is_some_and(|raw| wildcard(pattern, raw));
    matches
        && segment
            .sets
            .iter()
            .all(|(name, _)| pattern.contains(name.as_str()))
}

impl Rule {
    /// Whether the rule is about the tool `name`: the same name, or for MCP tools a name
    /// its wildcards match.
    fn names(&self, name: &str) -> bool {
        if self.tool.contains('*') {
            wildcard(&self.tool, name)
        } else {
            self.tool == name
        }
    }
}

/// `mcp__…` made of the characters MCP tool names are made of, and `*`.
fn is_mcp_tool_pattern(tool: &str) -> bool {
    tool.len() > MCP_TOOL_PREFIX.len()
        && tool.starts_with(MCP_TOOL_PREFIX)
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'))
}

fn path_glob(pattern: &str, cwd: &Path) -> Result<GlobMatcher, String> {
    let absolute = if pattern == "~" || pattern.starts_with("~/") || pattern.starts_with('/') {
        let resolved = super::path::resolve(Path::new("/"), pattern);
        // Keep the user's glob characters; only the home directory is substituted.
        resolved.display().to_string()
    } else {
        let base = globset::escape(&cwd.display().to_string());
        format!(
            "{}/{}",
            base.trim_end_matches('/'),
            pattern.trim_start_matches("./")
        )
    };
    GlobBuilder::new(&absolute)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("`{pattern}` is not a valid glob: {}", e.kind()))
}

/// What a call's rules are matched against.
pub enum Target {
    /// A bash command: the whole text (whitespace collapsed) and its parsed shape, `None`
    /// when it does not parse.
    Command {
        text: String,
        shape: Option<CommandShape>,
    },
    /// The resolved path a path tool works on, where it really is (symlinks followed;
    /// inside the working directory, expressed under the working directory as given), and
    /// which file it is (device and inode) when it exists.
    Path {
        path: PathBuf,
        real: PathBuf,
        file: Option<identity::File>,
    },
    /// Nothing to match a pattern against.
    Nothing,
}

impl Target {
    /// What `call` of `tool` works on.
    pub fn of(tool: &dyn Tool, call: &ToolCall, cwd: &Path) -> Target {
        let subject = tool.subject();
        let value = subject.value(&call.arguments);
        match subject {
            Subject::Command(_) => {
                let command = value.unwrap_or("");
                Target::Command {
                    text: collapse(command),
                    shape: shell::parse(command),
                }
            }
            Subject::Path(_) => {
                let raw = value.filter(|p| !p.trim().is_empty()).unwrap_or(".");
                Target::path(&super::path::resolve(cwd, raw), cwd)
            }
            Subject::None => Target::Nothing,
        }
    }

    /// A path target judged by its names only (no look at which file it is).
    pub fn path_by_name(path: &Path, real: PathBuf) -> Target {
        Target::Path {
            path: path.to_path_buf(),
            real,
            file: None,
        }
    }

    /// A path target: `path` (absolute, normalised), where it really is, and which file.
    pub fn path(path: &Path, cwd: &Path) -> Target {
        Target::Path {
            path: path.to_path_buf(),
            real: real_under(path, cwd),
            // Compared by identity only when another path may lead to it.
            file: identity::File::of_path(path)
                .filter(|file| file.may_have_other_paths(identity::mount_of(cwd))),
        }
    }
}

/// Where `path` really is (symbolic links followed), expressed under the working
/// directory as given when it is inside it, since relative globs are anchored there.
pub fn real_under(path: &Path, cwd: &Path) -> PathBuf {
    let real = super::path::real_path(path);
    let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    match real.strip_prefix(&real_cwd) {
        Ok(rest) => cwd.join(rest),
        Err(_) => real,
    }
}

/// The rules of one `[permissions]` table.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

/// Which list of `[permissions]` a rule is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

impl RuleSet {
    pub fn parse(
        allow: &[String],
        ask: &[String],
        deny: &[String],
        cwd: &Path,
    ) -> Result<RuleSet, RuleError> {
        let list = |texts: &[String], key: &str| -> Result<Vec<Rule>, RuleError> {
            texts
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    Rule::parse(text, cwd).map_err(|message| RuleError {
                        key: format!("permissions.{key}[{i}]"),
                        message,
                    })
                })
                .collect()
        };
        Ok(RuleSet {
            allow: list(allow, "allow")?,
            ask: list(ask, "ask")?,
            deny: list(deny, "deny")?,
        })
    }

    /// Say where each rule was written: `sources(kind, index)` for the rule at `index` of
    /// the `kind` list.
    pub fn locate(&mut self, sources: impl Fn(RuleKind, usize) -> Option<String>) {
        for (kind, list) in [
            (RuleKind::Allow, &mut self.allow),
            (RuleKind::Ask, &mut self.ask),
            (RuleKind::Deny, &mut self.deny),
        ] {
            for (i, rule) in list.iter_mut().enumerate() {
                rule.source = sources(kind, i);
            }
        }
    }

    /// Every rule with its list, in order: allow, ask, deny.
    pub fn all(&self) -> impl Iterator<Item = (RuleKind, &Rule)> {
        self.allow
            .iter()
            .map(|r| (RuleKind::Allow, r))
            .chain(self.ask.iter().map(|r| (RuleKind::Ask, r)))
            .chain(self.deny.iter().map(|r| (RuleKind::Deny, r)))
    }

    /// Add a rule (from the `/permissions` view) to the `kind` list.
    pub fn add(&mut self, kind: RuleKind, rule: Rule) {
        match kind {
            RuleKind::Allow => self.allow.push(rule),
            RuleKind::Ask => self.ask.push(rule),
            RuleKind::Deny => self.deny.push(rule),
        }
    }

    /// The segments of a command no allow rule covers (for the reason of an ask).
    pub fn uncovered(&self, call: &ToolCall, target: &Target) -> Vec<Segment> {
        let Target::Command {
            shape: Some(shape), ..
        } = target
        else {
            return Vec::new();
        };
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.names(&call.name)).collect();
        shape
            .judged()
            .filter(|segment| {
                !rules.iter().any(|r| match &r.pattern {
                    Pattern::Command(pattern) => allows_segment(pattern, segment),
                    Pattern::Whole => true,
                    _ => false,
                })
            })
            .cloned()
            .collect()
    }

    /// Whether allow rules would cover the command if it wrote no files (for the reason of
    /// an ask).
    pub fn allows_all_but_redirections(&self, call: &ToolCall, target: &Target) -> bool {
        match target {
            Target::Command {
                shape: Some(shape), ..
            } => {
                shape.opaque.is_empty()
                    && shape.judged().next().is_some()
                    && self.uncovered(call, target).is_empty()
            }
            _ => false,
        }
    }

    /// The same rules with their relative path globs anchored at `cwd` instead (a session
    /// in another directory, e.g. one an editor opens).
    pub fn anchored_at(&self, cwd: &Path) -> Result<RuleSet, RuleError> {
        let texts = |rules: &[Rule]| rules.iter().map(|r| r.text.clone()).collect::<Vec<_>>();
        let mut anchored = RuleSet::parse(
            &texts(&self.allow),
            &texts(&self.ask),
            &texts(&self.deny),
            cwd,
        )?;
        // Same rules in the same order: each keeps where it was written.
        for (to, from) in [
            (&mut anchored.allow, &self.allow),
            (&mut anchored.ask, &self.ask),
            (&mut anchored.deny, &self.deny),
        ] {
            for (rule, original) in to.iter_mut().zip(from) {
                rule.source = original.source.clone();
            }
        }
        Ok(anchored)
    }

    /// The first deny rule touching the call.
    pub fn denied_by(&self, call: &ToolCall, target: &Target) -> Option<&Rule> {
        self.deny
            .iter()
            .find(|rule| rule.touches(&call.name, target))
    }

    /// The first ask rule touching the call.
    pub fn asked_by(&self, call: &ToolCall, target: &Target) -> Option<&Rule> {
        self.ask
            .iter()
            .find(|rule| rule.touches(&call.name, target))
    }

    /// Whether a deny or ask rule with a path pattern for `tool` touches `target`.
    pub fn restricts_path(&self, tool: &str, target: &Target) -> bool {
        self.deny
            .iter()
            .chain(&self.ask)
            .filter(|rule| matches!(rule.pattern, Pattern::Path(_)))
            .any(|rule| rule.touches(tool, target))
    }

    /// The files the deny and ask path rules of `tools` name, by identity (what tree
    /// searches leave out).
    pub fn named_files(&self, tools: &[&str]) -> identity::Named {
        let mut named = identity::Named::complete();
        for rule in self.deny.iter().chain(&self.ask) {
            if tools.iter().any(|tool| rule.tool == *tool)
                && let Some(files) = rule.named_files()
            {
                named.extend(files);
            }
        }
        named
    }

    /// The first deny path rule of `tool` that names `file` by another path (a hard link,
    /// a bind mount), and that path.
    pub fn denied_file(&self, tool: &str, file: &identity::File) -> Option<(&Rule, PathBuf)> {
        self.deny
            .iter()
            .filter(|rule| rule.tool == tool)
            .find_map(|rule| rule.same_file(file).map(|path| (rule, path)))
    }

    /// Whether some deny or ask rule names `tool` with a command pattern: then a command
    /// that cannot be matched against it (one that does not parse) cannot be judged.
    pub fn restricts_commands(&self, tool: &str) -> bool {
        self.deny
            .iter()
            .chain(&self.ask)
            .any(|rule| rule.names(tool) && matches!(rule.pattern, Pattern::Command(_)))
    }

    /// Whether any deny or ask rule names `tool` with a path pattern.
    pub fn restricts_any_path(&self, tool: &str) -> bool {
        self.deny
            .iter()
            .chain(&self.ask)
            .any(|rule| rule.tool == tool && matches!(rule.pattern, Pattern::Path(_)))
    }

    /// Whether allow rules cover the whole call. A bash command needs every segment
    /// covered (a wrapper's by what it runs; one given a variable that changes what runs
    /// by a rule naming the variable), must parse, must not write files through a
    /// redirection, and must have nothing opaque (`eval`) — unless a bare `bash` rule
    /// allows every command.
    pub fn allows(&self, call: &ToolCall, target: &Target) -> bool {
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.names(&call.name)).collect();
        if rules.iter().any(|r| matches!(r.pattern, Pattern::Whole)) {
            return true;
        }
        match target {
            Target::Command { shape, .. } => match shape {
                Some(shape)
                    if !shape.writes_files
                        && shape.opaque.is_empty()
                        && shape.judged().next().is_some() =>
                {
                    self.uncovered(call, target).is_empty()
                }
                _ => false,
            },
            _ => rules.iter().any(|rule| rule.covers(&call.name, target)),
        }
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `*` matches any run of characters (spaces included); everything else is literal.
fn wildcard(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            backtrack = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star, matched)) = backtrack {
            p = star + 1;
            t = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
            invalid_arguments: None,
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> RuleSet {
        let own = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        RuleSet::parse(&own(allow), &own(ask), &own(deny), Path::new("/repo")).unwrap()
    }

    fn bash(command: &str) -> ToolCall {
        call("bash", json!({"command": command}))
    }

    fn target(call: &ToolCall, cwd: &Path) -> Target {
        let tool = crate::tools::builtin_tool(&call.name).unwrap();
        Target::of(tool.as_ref(), call, cwd)
    }

    #[test]
    fn wildcards_match_anything_including_spaces() {
        assert!(wildcard("git status*", "git status"));
        assert!(wildcard("git status*", "git status --short"));
        assert!(!wildcard("git status*", "git stash"));
        assert!(wildcard("cargo * --release", "cargo build -p x --release"));
        assert!(!wildcard("cargo * --release", "cargo build"));
        assert!(wildcard("*", ""));
    }

    #[test]
    fn every_segment_of_a_command_must_be_allowed() {
        let set = rules(&["bash(git status*)", "bash(cargo test*)"], &[], &[]);
        let cwd = Path::new("/repo");
        let allowed = |command: &str| {
            let c = bash(command);
            set.allows(&c, &target(&c, cwd))
        };
        assert!(allowed("git status"));
        assert!(allowed("git   status  --short && cargo test -q"));
        assert!(!allowed("git status && rm -rf ~"));
        assert!(!allowed("git status; rm -rf ~"));
        assert!(!allowed("git status | sh"));
        assert!(!allowed("git status $(rm -rf ~)"));
        assert!(!allowed("git status `rm -rf ~`"));
        assert!(!allowed("git status\nrm -rf ~"));
        assert!(!allowed("git status > .git/config"));
        assert!(!allowed("git status 'unterminated"));
        assert!(allowed("cargo test 2>&1"));
        assert!(allowed("git status > /dev/null"));
    }

    #[test]
    fn deny_and_ask_rules_catch_any_segment() {
        let set = rules(&["bash"], &["bash(git push*)"], &["bash(rm -rf *)"]);
        let cwd = Path::new("/repo");
        let c = bash("ls && rm -rf /tmp/x");
        assert_eq!(
            set.denied_by(&c, &target(&c, cwd)).map(|r| r.to_string()),
            Some("bash(rm -rf *)".to_string())
        );
        let c = bash("echo $(rm -rf /)");
        assert!(set.denied_by(&c, &target(&c, cwd)).is_some());
        let c = bash("git add . && git push origin");
        assert!(set.asked_by(&c, &target(&c, cwd)).is_some());
        assert!(set.denied_by(&c, &target(&c, cwd)).is_none());
        // A bare rule covers every command, even one that does not parse.
        let c = bash("echo 'unterminated");
        assert!(set.allows(&c, &target(&c, cwd)));
    }

    #[test]
    fn path_rules_are_globs_relative_to_the_working_directory() {
        let set = rules(
            &["edit(src/**)", "write(/tmp/**)", "read"],
            &[],
            &["read(.env)"],
        );
        let cwd = Path::new("/repo");
        let check = |name: &str, path: &str| {
            let c = call(name, json!({"path": path}));
            let target = target(&c, cwd);
            (
                set.allows(&c, &target),
                set.denied_by(&c, &target).is_some(),
            )
        };
        assert_eq!(check("edit", "src/a/b.rs"), (true, false));
        assert_eq!(check("edit", "./src/main.rs"), (true, false));
        assert_eq!(check("edit", "src/../Cargo.toml"), (false, false));
        assert_eq!(check("edit", "/repo/src/lib.rs"), (true, false));
        assert_eq!(check("write", "/tmp/scratch/x"), (true, false));
        assert_eq!(check("write", "src/x"), (false, false));
        assert_eq!(check("read", ".env"), (true, true));
        assert_eq!(check("read", "README.md"), (true, false));
    }

    #[test]
    fn mcp_tools_are_named_with_wildcards() {
        let set = rules(
            &["mcp__docs__*"],
            &["mcp__docs__delete*"],
            &["mcp__*__drop_table"],
        );
        let cwd = Path::new("/repo");
        let check = |name: &str| {
            let c = call(name, json!({"q": "x"}));
            (
                set.allows(&c, &Target::Nothing),
                set.asked_by(&c, &Target::Nothing).is_some(),
                set.denied_by(&c, &Target::Nothing).is_some(),
            )
        };
        assert_eq!(check("mcp__docs__search"), (true, false, false));
        assert_eq!(check("mcp__docs__delete_page"), (true, true, false));
        assert_eq!(check("mcp__db__drop_table"), (false, false, true));
        assert_eq!(check("mcp__docsearch__x"), (false, false, false));
        let _ = cwd;
        let own = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let error = RuleSet::parse(&own(&["mcp__docs__search(x)"]), &[], &[], cwd).unwrap_err();
        assert!(
            error.message.contains("take no pattern"),
            "{}",
            error.message
        );
        assert!(RuleSet::parse(&own(&["mcp__"]), &[], &[], cwd).is_err());
        assert!(RuleSet::parse(&own(&["mcp__a b"]), &[], &[], cwd).is_err());
    }

    #[test]
    fn rules_anchored_elsewhere_match_relative_to_the_new_directory() {
        let set = rules(&["edit(src/**)", "write(/tmp/**)"], &[], &["read(.env)"])
            .anchored_at(Path::new("/other"))
            .unwrap();
        let cwd = Path::new("/other");
        let check = |name: &str, path: &str| {
            let c = call(name, json!({"path": path}));
            let target = target(&c, cwd);
            (
                set.allows(&c, &target),
                set.denied_by(&c, &target).is_some(),
            )
        };
        assert_eq!(check("edit", "src/a.rs"), (true, false));
        assert_eq!(check("edit", "/repo/src/a.rs"), (false, false));
        assert_eq!(check("write", "/tmp/x"), (true, false));
        assert_eq!(check("read", ".env"), (false, true));
        assert_eq!(check("read", "/repo/.env"), (false, false));
    }

    #[test]
    fn bad_rules_name_their_key() {
        let own = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parse =
            |allow: &[&str]| RuleSet::parse(&own(allow), &[], &[], Path::new("/repo")).map(|_| ());
        let error = parse(&["read", "edit(src/[)"]).unwrap_err();
        assert_eq!(error.key, "permissions.allow[1]");
        assert!(
            error.message.starts_with("`src/[` is not a valid glob"),
            "{}",
            error.message
        );
        assert!(
            parse(&["bash(git status"])
                .unwrap_err()
                .message
                .contains("no closing")
        );
        assert!(
            parse(&["teleport"])
                .unwrap_err()
                .message
                .contains("names no tool")
        );
        assert!(
            parse(&["bash()"])
                .unwrap_err()
                .message
                .contains("empty pattern")
        );
    }
}
