//! The allow rules an "allow for this session" answer offers to add: for a command, one
//! rule per part no allow rule covers yet — its program, its subcommand when it has one, and
//! `*` (`npm test --watch` → `bash(npm test*)`); for a file change, the file's directory
//! (`edit(src/**)`); for a tool without a subject, the tool. A program that runs whatever it
//! is given (a shell, an interpreter, a wrapper, a runner) and `rm` get their exact command:
//! a wildcard there would allow any code. A part whose rule cannot be written exactly (its
//! text holds `*`, parentheses, a comma or a line break) gets no suggestion at all, so the
//! rule shown is never broader than it reads. The caller checks that the rules do cover the
//! call (`Permissions::suggest_rule`).

use super::super::shell::Segment;
use super::Target;
use crate::protocol::message::ToolCall;
use std::path::Path;

/// Programs that run code they are given (in their arguments, their input or a file), or
/// delete: their rules are exact commands, never wildcards. The wrappers described in
/// `wrapper_specs` and the project runners are added to these.
const RUNS_ANY_CODE: &[&str] = &[
    // shells
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "yash",
    "posh",
    "rbash",
    "lksh",
    "fish",
    "csh",
    "tcsh",
    "nu",
    "elvish",
    "xonsh",
    "pwsh",
    "busybox",
    "toybox",
    // interpreters
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "irb",
    "perl",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "R",
    "julia",
    "osascript",
    "java",
    "jshell",
    "groovy",
    "scala",
    "kotlin",
    "dotnet",
    "go",
    "cargo-script",
    "rust-script",
    "ts-node",
    "tsx",
    "npx",
    "bunx",
    "pnpx",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
    "vim",
    "vi",
    "nvim",
    "emacs",
    "ed",
    "expect",
    // builtins and programs that run other commands
    "eval",
    "exec",
    "source",
    ".",
    "command",
    "builtin",
    "env",
    "xargs",
    "find",
    "parallel",
    "sem",
    "su",
    "runuser",
    "sg",
    "script",
    "flock",
    "bwrap",
    "coproc",
    "trap",
    "alias",
    "newgrp",
    "fc",
    "setarch",
    "linux32",
    "linux64",
    "make",
    "gmake",
    "just",
    "ssh",
    "scp",
    "git-shell",
    "watch",
    "nix-shell",
    "docker",
    "podman",
    "kubectl",
    "crontab",
    "at",
    // deletes
    "rm",
    "rmdir",
    "shred",
    "unlink",
    "dd",
    "mkfs",
    "truncate",
];

/// The rules that would allow the uncovered parts of `call`, in order, or `None` when
/// some part cannot be written as a rule that is exactly as broad as it reads.
pub fn suggest(
    call: &ToolCall,
    target: &Target,
    uncovered: &[Segment],
    cwd: &Path,
) -> Option<Vec<String>> {
    let rules = match target {
        Target::Command { .. } => {
            if uncovered.is_empty() {
                return None;
            }
            let mut rules: Vec<String> = Vec::new();
            for segment in uncovered {
                let rule = format!("{}({})", call.name, command_pattern(segment)?);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            rules
        }
        Target::Path { path, .. } => {
            let dir = path.parent()?.strip_prefix(cwd).ok()?;
            let dir = dir.to_str()?;
            let pattern = if dir.is_empty() {
                "*".to_string()
            } else {
                format!("{}/**", globset::escape(dir))
            };
            if !writable(&pattern) {
                return None;
            }
            vec![format!("{}({pattern})", call.name)]
        }
        Target::Nothing => vec![call.name.clone()],
    };
    Some(rules)
}

/// The command pattern for one part of a command: `program subcommand*`, `program*`, or the
/// exact command for a program that runs any code (and for a part given variables that
/// change what runs, which a rule must name).
fn command_pattern(segment: &Segment) -> Option<String> {
    let text = segment.text.as_str();
    let exact = || (writable(text) && !text.contains('*')).then(|| text.to_string());
    let mut words = text.split(' ');
    let program = words.next().filter(|p| !p.is_empty())?;
    if !segment.sets.is_empty() || !plain(program) || runs_any_code(program) {
        return exact();
    }
    match words.next() {
        Some(second) if is_subcommand(second) => {
            if runner_subcommand(program, second) {
                return exact();
            }
            Some(format!("{program} {second}*"))
        }
        // `git -c core.pager=… log`, `cargo --config …`: options before the subcommand
        // that can make it run anything.
        Some(second) if second.starts_with('-') && OPTIONS_RUN_CODE.contains(&program) => exact(),
        _ => Some(format!("{program}*")),
    }
}

/// Programs whose options before the subcommand can make them run any program.
const OPTIONS_RUN_CODE: &[&str] = &["git", "cargo", "npm", "pnpm", "yarn", "hg", "svn", "rustup"];

/// Whether a rule holding `text` reads as exactly what it matches, and a list of rules
/// holding it splits where it seems to (`super::split_rules`).
fn writable(text: &str) -> bool {
    !text.contains(['(', ')', ',', '\n', '\r'])
}

/// A program name as a rule can start with it: a bare name, no path, no quoting.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// A second word that names a subcommand (`test`, `run-script`), not an option, a path, a
/// host name or an assignment.
fn is_subcommand(word: &str) -> bool {
    !word.starts_with('-')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// Whether `program` runs code it is given: an interpreter (`python3.12` too), a shell, a
/// wrapper, a runner that needs no subcommand (`ssh`), or `rm`.
fn runs_any_code(program: &str) -> bool {
    let versionless = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    RUNS_ANY_CODE.contains(&program)
        || RUNS_ANY_CODE.contains(&versionless)
        || ["python", "pypy", "ipython", "pip"]
            .iter()
            .any(|p| program.starts_with(p))
        || super::super::wrapper_specs::spec(program).is_some()
        || super::super::wrapper_specs::RUNNERS
            .iter()
            .any(|(name, subcommands)| *name == program && subcommands.is_empty())
}

/// `uv run`, `npm exec`, `docker exec`: a subcommand that runs what it is given.
fn runner_subcommand(program: &str, subcommand: &str) -> bool {
    super::super::wrapper_specs::RUNNERS
        .iter()
        .any(|(name, subcommands)| *name == program && subcommands.contains(&subcommand))
        || matches!(
            (program, subcommand),
            ("npm" | "pnpm" | "yarn" | "bun", "dlx" | "exec" | "x")
                | ("cargo", "script" | "run-script")
                | ("git", "daemon" | "shell")
        )
}

/// The rules of a list written on one line, `bash(npm test*), bash(curl*)`: split at the
/// commas outside parentheses, each trimmed; empty items are dropped.
pub fn split_rules(text: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                rules.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    rules.push(text[start..].trim().to_string());
    rules.retain(|rule| !rule.is_empty());
    rules
}

#[cfg(test)]
mod tests {
    use super::super::{RuleSet, Target};
    use crate::protocol::message::ToolCall;
    use serde_json::json;
    use std::path::Path;

    fn suggested(command: &str) -> Option<Vec<String>> {
        let call = ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: json!({ "command": command }),
            invalid_arguments: None,
        };
        let cwd = Path::new("/repo");
        let tool = crate::tools::builtin_tool("bash").unwrap();
        let target = Target::of(tool.as_ref(), &call, cwd);
        let uncovered = RuleSet::default().uncovered(&call, &target);
        super::suggest(&call, &target, &uncovered, cwd)
    }

    fn one(command: &str) -> String {
        let rules = suggested(command).unwrap_or_else(|| panic!("no rule for {command}"));
        assert_eq!(rules.len(), 1, "{rules:?}");
        rules[0].clone()
    }

    #[test]
    fn a_program_and_its_subcommand_get_a_wildcard() {
        assert_eq!(one("npm test --watch"), "bash(npm test*)");
        assert_eq!(one("cargo build --release"), "bash(cargo build*)");
        assert_eq!(one("ls -la"), "bash(ls*)");
        assert_eq!(one("cat src/main.rs"), "bash(cat*)");
        assert_eq!(
            suggested("git status && cargo test -q"),
            Some(vec![
                "bash(git status*)".to_string(),
                "bash(cargo test*)".to_string()
            ])
        );
    }

    #[test]
    fn interpreters_wrappers_runners_and_rm_never_get_a_wildcard() {
        for command in [
            "sh script.sh",
            "bash run.sh --fast",
            "python3 -m http.server",
            "python3.12 tool.py",
            "node server.js",
            "perl -e print",
            "ruby x.rb",
            "rm -rf build",
            "npm exec vitest",
            "uv run pytest",
            "docker run alpine ls",
            "ssh host ls",
            "make all",
            "awk -f prog.awk",
            "sed -e s/a/b/ file",
            "./configure --prefix=/usr",
        ] {
            let rules = suggested(command).unwrap_or_default();
            assert!(
                rules.iter().all(|rule| !rule.contains('*')),
                "{command}: {rules:?}"
            );
        }
        assert_eq!(
            one("python3 -m http.server"),
            "bash(python3 -m http.server)"
        );
        assert_eq!(one("rm -rf build"), "bash(rm -rf build)");
    }

    #[test]
    fn a_wrapper_is_looked_through_and_what_it_runs_is_suggested() {
        // The wrapper is not judged, what it runs is: and `sh -c` is never in a rule.
        let rules = suggested("npm test && sh -c 'curl example.com'").unwrap();
        assert_eq!(rules, vec!["bash(npm test*)", "bash(curl*)"]);
        let rules = suggested("timeout 5 python3 x.py").unwrap();
        assert_eq!(rules, vec!["bash(python3 x.py)"]);
    }

    #[test]
    fn a_list_splits_at_commas_outside_parentheses() {
        assert_eq!(
            super::split_rules("bash(npm test*), bash(echo a, b) ,edit(src/**)"),
            vec!["bash(npm test*)", "bash(echo a, b)", "edit(src/**)"]
        );
        assert_eq!(super::split_rules(" , "), Vec::<String>::new());
    }

    #[test]
    fn what_cannot_be_written_exactly_gets_no_rule() {
        // An exact rule holding `*` would be a wildcard: none is offered.
        assert_eq!(suggested("rm -rf *"), None);
        assert_eq!(
            suggested("echo 'a, b'"),
            Some(vec!["bash(echo*)".to_string()])
        );
        assert_eq!(suggested("python3 -c 'print(1)'"), None);
    }
}
