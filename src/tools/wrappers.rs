//! What a wrapper command runs, so that permission rules judge the inner command: the
//! programs of `wrapper_specs` (`sudo`, `timeout`, `setsid`, `flock`, `unshare`, …), `env`,
//! `xargs`, `find … -exec … ;`, `trap 'script'`, `coproc`, `su -c`, `script -c`, `watch`,
//! and `bash|sh|… -c SCRIPT` with a literal script (parsed in turn). Project runners (`uv
//! run`, `docker exec`, `ssh HOST`) are judged as themselves, and what they might run is
//! shown to deny rules. What cannot be known before it runs — `eval`, a shell reading its
//! script from its input, `source <(…)`, an alias, a script or command name that is not a
//! literal — is reported as opaque, and such a command always asks.

use super::environment::is_name;
pub use super::words::Word;
use super::wrapper_specs::{self, Bare, RUNNERS, Spec};

/// A command a wrapper runs: its words, and the `NAME=value` words it sets in its
/// environment (`env A=1 cmd`, `sudo A=1 cmd`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    pub words: Vec<Word>,
    pub env: Vec<Word>,
}

impl Run {
    fn of(words: &[Word]) -> Run {
        Run {
            words: words.to_vec(),
            env: Vec::new(),
        }
    }
}

/// What a wrapper runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Inner {
    /// Not a wrapper (or a wrapper that runs nothing, such as `command -v x`).
    None,
    /// The command it runs; allow rules judge that instead of the wrapper.
    Command(Run),
    /// Commands run one by one (`find -exec a ; -exec b ;`), besides the program itself.
    Commands(Vec<Vec<Word>>),
    /// A shell script given literally (`bash -c '…'`), to be parsed.
    Script(String),
    /// The program is judged as itself; these are what it may run, seen by deny and ask
    /// rules (a runner such as `uv run`, or a wrapper with an option not known here).
    Maybe {
        commands: Vec<Vec<Word>>,
        scripts: Vec<String>,
    },
    /// What it runs cannot be known before it runs: why.
    Opaque(String),
}

const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh",
];

/// Shells whose scripts are not bash's language: their `-c` cannot be parsed here.
const OTHER_SHELLS: &[&str] = &["fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"];

/// The program a command word names: the last part of a path (`/usr/bin/../bin/rm` is
/// `rm`).
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// What `words` (a simple command, name first, assignments already taken off) runs.
pub fn inner(words: &[Word]) -> Inner {
    let Some(first) = words.first() else {
        return Inner::None;
    };
    if !first.literal {
        return Inner::Opaque(format!(
            "the command name `{}` is only known when it runs",
            first.text
        ));
    }
    let name = program_name(&first.text);
    let rest = &words[1..];
    let has = |options: &[&str]| rest.iter().any(|w| options.contains(&w.text.as_str()));
    match name {
        "eval" => Inner::Opaque("`eval` runs a command made when it runs".to_string()),
        "source" | "." => source(name, rest),
        "trap" => trap(rest),
        "alias" if rest.iter().any(|w| w.text.contains('=') || !w.literal) => {
            Inner::Opaque("`alias` defines a name that runs other commands later".to_string())
        }
        "hash" if has(&["-p"]) => {
            Inner::Opaque("`hash -p` makes a command name run another program".to_string())
        }
        "enable" if rest.iter().any(|w| w.text.starts_with("-f")) => {
            Inner::Opaque("`enable -f` loads a builtin from a shared library".to_string())
        }
        "fc" => Inner::Opaque("`fc` runs commands from the history".to_string()),
        "compgen"
            if rest
                .iter()
                .any(|w| ["-C", "-F", "-W"].iter().any(|o| w.text.starts_with(o))) =>
        {
            Inner::Opaque("`compgen` runs or expands what it is given when it runs".to_string())
        }
        "mapfile" | "readarray" if rest.iter().any(|w| w.text.starts_with("-C")) => {
            Inner::Opaque(format!("`{name} -C` runs a callback when it runs"))
        }
        "bind" if rest.iter().any(|w| w.text.starts_with("-x")) => {
            Inner::Opaque("`bind -x` defines a command run later".to_string())
        }
        "parallel" | "sem" => Inner::Opaque(format!(
            "`{name}` builds the commands it runs from its arguments and input"
        )),
        "newgrp" => Inner::Opaque(
            "`newgrp` starts a shell that reads its commands from its input".to_string(),
        ),
        "coproc" => coproc(rest),
        "env" => env(rest),
        "xargs" => xargs(rest),
        "find" => find_exec(rest),
        "su" | "runuser" => su(name, rest),
        "sg" => sg(rest),
        "script" => script(rest),
        "flock" => flock(rest),
        "bwrap" => bwrap(rest),
        "busybox" | "toybox" => match rest.first() {
            Some(applet) if !applet.text.starts_with('-') => Inner::Command(Run::of(rest)),
            _ => Inner::None,
        },
        "setarch" | "linux32" | "linux64" | "i386" | "x86_64" | "uname26" => setarch(name, rest),
        shell if SHELLS.contains(&shell) => shell_script(name, rest),
        shell if OTHER_SHELLS.contains(&shell) => other_shell(name, rest),
        _ => {
            if let Some(spec) = wrapper_specs::spec(name) {
                return by_spec(spec, name, words, rest);
            }
            runner(name, words, rest)
        }
    }
}

/// The command of a wrapper described by `spec`.
fn by_spec(spec: &Spec, name: &str, words: &[Word], rest: &[Word]) -> Inner {
    let mut env = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut operands = spec.operands;
    let mut i = 0;
    while i < rest.len() {
        let word = &rest[i];
        let text = word.text.as_str();
        let option_like = word.literal && text.starts_with('-') && text != "-";
        if word.literal && text == "--" {
            i += 1;
            break;
        }
        if option_like && spec.numeric_flags && text[1..].chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        if option_like && let Some(long) = text.strip_prefix("--") {
            let (option, inline) = match long.split_once('=') {
                Some((option, value)) => (option, Some(value)),
                None => (long, None),
            };
            let written = format!("--{option}");
            let value = if spec.long_values.contains(&option) {
                match inline {
                    Some(value) => Some(Word::literal(value)),
                    None => {
                        i += 1;
                        rest.get(i).cloned()
                    }
                }
            } else if spec.long_flags.contains(&option) || spec.any_long_flag {
                None
            } else {
                return unsure(words);
            };
            if let Some(value) = value {
                if spec.script.contains(&written.as_str()) {
                    return script_word(name, &value);
                }
                if spec.env.contains(&written.as_str()) {
                    env.push(value);
                }
            }
            seen.push(written);
            i += 1;
            continue;
        }
        if option_like {
            let cluster: Vec<char> = text[1..].chars().collect();
            for (k, c) in cluster.iter().enumerate() {
                let written = format!("-{c}");
                if spec.short_values.contains(*c) {
                    let attached: String = cluster[k + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        i += 1;
                        rest.get(i).cloned()
                    } else {
                        Some(Word::literal(attached))
                    };
                    if let Some(value) = value {
                        if spec.env.contains(&written.as_str()) {
                            env.push(value.clone());
                        }
                        if spec.script.contains(&written.as_str()) {
                            return script_word(name, &value);
                        }
                    }
                    seen.push(written);
                    break;
                }
                if !spec.short_flags.contains(*c) {
                    return unsure(words);
                }
                seen.push(written);
            }
            i += 1;
            continue;
        }
        if operands > 0 {
            operands -= 1;
            i += 1;
            continue;
        }
        if spec.assignments && word.literal && text.split_once('=').is_some_and(|(n, _)| is_name(n))
        {
            env.push(word.clone());
            i += 1;
            continue;
        }
        break;
    }
    let had = |options: &[&str]| seen.iter().any(|s| options.contains(&s.as_str()));
    if had(spec.runs_nothing) {
        return Inner::None;
    }
    let command = rest.get(i..).unwrap_or_default();
    let Some(first) = command.first() else {
        return if spec.bare == Bare::Shell || had(spec.shell_flags) {
            Inner::Opaque(format!(
                "`{name}` without a command starts a shell that reads its commands from its input"
            ))
        } else {
            Inner::None
        };
    };
    if !first.literal {
        return Inner::Opaque(format!(
            "`{name}` runs `{}`, which is only known when it runs",
            first.text
        ));
    }
    if spec.through_shell && !had(spec.exec_flags) {
        return joined_script(name, command);
    }
    Inner::Command(Run {
        words: command.to_vec(),
        env,
    })
}

/// A wrapper whose command line is not understood: judged as itself, and every command it
/// might run (each run of words after it that starts like a command) shown to deny rules.
fn unsure(words: &[Word]) -> Inner {
    Inner::Maybe {
        commands: suffixes(words.get(1..).unwrap_or_default()),
        scripts: Vec::new(),
    }
}

/// Every run of `words` that starts with a literal word that is not an option.
fn suffixes(words: &[Word]) -> Vec<Vec<Word>> {
    (0..words.len())
        .filter(|&i| {
            words[i].literal && !words[i].text.starts_with('-') && !words[i].text.is_empty()
        })
        .map(|i| words[i..].to_vec())
        .collect()
}

/// A script given as one word: parsed when it is a literal.
fn script_word(name: &str, word: &Word) -> Inner {
    if word.literal {
        Inner::Script(word.text.clone())
    } else {
        Inner::Opaque(format!(
            "`{name}` runs the script `{}`, only known when it runs",
            word.text
        ))
    }
}

/// Words a program joins with spaces and runs with `sh -c` (`watch ls -la`).
fn joined_script(name: &str, words: &[Word]) -> Inner {
    if let Some(word) = words.iter().find(|w| !w.literal) {
        return Inner::Opaque(format!(
            "`{name}` runs a script containing `{}`, only known when it runs",
            word.text
        ));
    }
    Inner::Script(
        words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// `source FILE` / `. FILE`: a file's commands are not judged (see docs/security.md), but
/// commands it reads from a substitution or its input cannot be judged at all.
fn source(name: &str, words: &[Word]) -> Inner {
    let Some(file) = words.first() else {
        return Inner::None;
    };
    if !file.literal {
        return Inner::Opaque(format!(
            "`{name}` runs the commands of `{}`, only known when it runs",
            file.text
        ));
    }
    if reads_input(&file.text) {
        return Inner::Opaque(format!(
            "`{name} {}` runs commands from its input, which cannot be checked",
            file.text
        ));
    }
    Inner::None
}

/// Whether a file name is the command's input or an inherited descriptor.
fn reads_input(path: &str) -> bool {
    path == "/dev/stdin"
        || path == "-"
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// `trap 'SCRIPT' SIGNAL…`: the script runs later; judged like `bash -c`.
fn trap(words: &[Word]) -> Inner {
    let mut i = 0;
    if let Some(word) = words.first().filter(|w| w.literal) {
        match word.text.as_str() {
            "-l" | "-p" | "-P" => return Inner::None,
            "--" => i = 1,
            _ => {}
        }
    }
    match words.get(i) {
        None => Inner::None,
        Some(handler) if handler.literal && (handler.text.is_empty() || handler.text == "-") => {
            Inner::None
        }
        // `trap SIGNAL` alone resets it.
        Some(_) if words.len() == i + 1 => Inner::None,
        Some(handler) => script_word("trap", handler),
    }
}

/// `coproc COMMAND`: runs it in the background. `coproc NAME { …; }` is not parsed here.
fn coproc(words: &[Word]) -> Inner {
    if words
        .iter()
        .any(|w| matches!(w.text.as_str(), "{" | "}" | "(" | ")"))
    {
        return Inner::Opaque(
            "`coproc NAME { … }` is not parsed here, so it cannot be checked".into(),
        );
    }
    if words.is_empty() {
        Inner::None
    } else {
        Inner::Command(Run::of(words))
    }
}

fn env(words: &[Word]) -> Inner {
    let mut assignments = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        if !word.literal {
            return Inner::Opaque(format!(
                "`env` runs `{}`, which is only known when it runs",
                word.text
            ));
        }
        let text = word.text.as_str();
        match text {
            "-S" | "--split-string" => {
                return match words.get(i + 1) {
                    Some(script) if script.literal => Inner::Script(script.text.clone()),
                    _ => Inner::Opaque("`env -S` with a command that is not a literal".into()),
                };
            }
            "-u" | "--unset" | "-C" | "--chdir" | "-a" | "--argv0" => i += 2,
            "-i"
            | "--ignore-environment"
            | "-0"
            | "--null"
            | "-v"
            | "--debug"
            | "-"
            | "--list-signal-handling" => i += 1,
            "--" => {
                i += 1;
                break;
            }
            _ if text.starts_with("-S") || text.starts_with("--split-string=") => {
                let script = text
                    .strip_prefix("--split-string=")
                    .or_else(|| text.strip_prefix("-S"))
                    .unwrap_or_default();
                return Inner::Script(script.to_string());
            }
            _ if [
                "--unset=",
                "--chdir=",
                "--argv0=",
                "--block-signal",
                "--default-signal",
                "--ignore-signal",
            ]
            .iter()
            .any(|p| text.starts_with(p)) =>
            {
                i += 1
            }
            _ if text.starts_with("-u") || text.starts_with("-C") => i += 1,
            _ if text.starts_with('-') => {
                return unsure(&[&[Word::literal("env")], words].concat());
            }
            // Any word with `=` is an assignment to env, a valid name or not
            // (`BASH_FUNC_f%%=…`).
            _ if text.contains('=') => {
                assignments.push(word.clone());
                i += 1;
            }
            _ => break,
        }
    }
    let command = words.get(i..).unwrap_or_default();
    if command.is_empty() {
        // Prints the environment; its assignments still matter to nothing.
        Inner::None
    } else {
        Inner::Command(Run {
            words: command.to_vec(),
            env: assignments,
        })
    }
}

fn xargs(words: &[Word]) -> Inner {
    const SPEC: Spec = Spec {
        names: &["xargs"],
        short_values: "aEdILnPs",
        short_flags: "0eilopRrtx",
        long_values: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_flags: &[
            "null",
            "open-tty",
            "interactive",
            "no-run-if-empty",
            "verbose",
            "exit",
            "show-limits",
            "eof",
            "replace",
            "max-lines",
            "help",
            "version",
        ],
        any_long_flag: false,
        runs_nothing: &["--show-limits", "--help", "--version"],
        script: &[],
        env: &[],
        shell_flags: &[],
        operands: 0,
        assignments: false,
        through_shell: false,
        exec_flags: &[],
        numeric_flags: false,
        bare: Bare::Nothing,
    };
    let replaces = words.iter().any(|w| {
        w.text.starts_with("-I") || w.text.starts_with("-i") || w.text.starts_with("--replace")
    });
    let all = [&[Word::literal("xargs")], words].concat();
    match by_spec(&SPEC, "xargs", &all, words) {
        // The words it reads are appended (unless -I puts them in place), shown as `…`,
        // so that `rm -rf *` matches `xargs rm -rf`.
        Inner::Command(mut run) if !replaces => {
            run.words.push(Word::unknown("…"));
            Inner::Command(run)
        }
        // Without a command, xargs runs echo.
        other => other,
    }
}

/// The commands of `find`'s `-exec`/`-execdir`/`-ok`/`-okdir` actions.
fn find_exec(words: &[Word]) -> Inner {
    let mut commands = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if matches!(
            words[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            let command = words.get(start..end).unwrap_or_default().to_vec();
            match inner(&command) {
                Inner::Opaque(why) => return Inner::Opaque(why),
                _ if command.is_empty() => {}
                _ => commands.push(command),
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    if commands.is_empty() {
        Inner::None
    } else {
        Inner::Commands(commands)
    }
}

/// `su [options] [-c SCRIPT] [USER]`, `runuser [-u USER] COMMAND…`: options may come
/// anywhere; without a script or command a shell reads its input.
fn su(name: &str, words: &[Word]) -> Inner {
    let mut i = 0;
    while i < words.len() {
        let text = words[i].text.as_str();
        match text {
            "-c" | "--command" | "--session-command" => {
                return match words.get(i + 1) {
                    Some(script) => script_word(name, script),
                    None => Inner::Opaque(format!("`{name} -c` without a script")),
                };
            }
            _ if text.starts_with("--command=") || text.starts_with("--session-command=") => {
                let script = text.split_once('=').map(|(_, s)| s).unwrap_or_default();
                return Inner::Script(script.to_string());
            }
            "-u" if name == "runuser" => {
                // runuser -u USER [--] COMMAND…
                let mut start = i + 2;
                if words.get(start).is_some_and(|w| w.text == "--") {
                    start += 1;
                }
                return match words.get(start..) {
                    Some(command) if !command.is_empty() => Inner::Command(Run::of(command)),
                    _ => Inner::Opaque(format!(
                        "`{name}` without a command starts a shell that reads its commands from its input"
                    )),
                };
            }
            "-g"
            | "-G"
            | "-s"
            | "-w"
            | "--group"
            | "--supp-group"
            | "--shell"
            | "--whitelist-environment" => i += 2,
            _ => i += 1,
        }
    }
    Inner::Opaque(format!(
        "`{name}` without `-c` starts a shell that reads its commands from its input"
    ))
}

/// `sg GROUP [-c] COMMAND`: the command runs through `sh -c`.
fn sg(words: &[Word]) -> Inner {
    let mut rest = words;
    if rest.first().is_some_and(|w| w.text == "-") {
        rest = &rest[1..];
    }
    let Some((_group, command)) = rest.split_first() else {
        return Inner::Opaque("`sg` without a command starts a shell".to_string());
    };
    let command = match command.first() {
        Some(flag) if flag.text == "-c" => &command[1..],
        _ => command,
    };
    if command.is_empty() {
        return Inner::Opaque("`sg` without a command starts a shell".to_string());
    }
    joined_script("sg", command)
}

/// `script [options] [-c COMMAND] [FILE]`: options may come anywhere.
fn script(words: &[Word]) -> Inner {
    for (i, word) in words.iter().enumerate() {
        let text = word.text.as_str();
        if text == "-c" || text == "--command" {
            return match words.get(i + 1) {
                Some(script) => script_word("script", script),
                None => Inner::Opaque("`script -c` without a command".to_string()),
            };
        }
        if let Some(inline) = text.strip_prefix("--command=") {
            return Inner::Script(inline.to_string());
        }
        if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            // `-qc CMD`, `-cCMD`: `c` after flags that take no value.
            let before_value = cluster
                .find(|c: char| "EIOBTmoc".contains(c))
                .filter(|&at| cluster[at..].starts_with('c'));
            if let Some(at) = before_value {
                let inline = &cluster[at + 1..];
                if !inline.is_empty() {
                    return Inner::Script(inline.to_string());
                }
                return match words.get(i + 1) {
                    Some(script) => script_word("script", script),
                    None => Inner::Opaque("`script -c` without a command".to_string()),
                };
            }
        }
    }
    Inner::Opaque(
        "`script` without `-c` starts a shell that reads its commands from its input".to_string(),
    )
}

/// `flock [options] FILE COMMAND…`, `flock [options] FILE -c SCRIPT`, `flock FD`.
fn flock(words: &[Word]) -> Inner {
    const SPEC: Spec = Spec {
        names: &["flock"],
        short_values: "wEc",
        short_flags: "sxeunoFv",
        long_values: &["timeout", "wait", "conflict-exit-code", "command"],
        long_flags: &[
            "shared",
            "exclusive",
            "unlock",
            "nonblock",
            "nb",
            "close",
            "no-fork",
            "verbose",
            "help",
            "version",
        ],
        any_long_flag: false,
        runs_nothing: &[],
        script: &["-c", "--command"],
        env: &[],
        shell_flags: &[],
        operands: 1,
        assignments: false,
        through_shell: false,
        exec_flags: &[],
        numeric_flags: false,
        bare: Bare::Nothing,
    };
    let all = [&[Word::literal("flock")], words].concat();
    match by_spec(&SPEC, "flock", &all, words) {
        // `flock FILE -c SCRIPT`: the script option after the file.
        Inner::Command(run)
            if run
                .words
                .first()
                .is_some_and(|w| w.text == "-c" || w.text == "--command") =>
        {
            match run.words.get(1) {
                Some(script) => script_word("flock", script),
                None => Inner::Opaque("`flock -c` without a script".to_string()),
            }
        }
        other => other,
    }
}

/// `bwrap [options] COMMAND…`: options take zero to three values.
fn bwrap(words: &[Word]) -> Inner {
    const ONE: &[&str] = &[
        "--args",
        "--argv0",
        "--userns",
        "--userns2",
        "--pidns",
        "--uid",
        "--gid",
        "--hostname",
        "--chdir",
        "--unsetenv",
        "--lock-file",
        "--sync-fd",
        "--remount-ro",
        "--exec-label",
        "--file-label",
        "--proc",
        "--dev",
        "--tmpfs",
        "--mqueue",
        "--dir",
        "--seccomp",
        "--add-seccomp-fd",
        "--block-fd",
        "--userns-block-fd",
        "--info-fd",
        "--json-status-fd",
        "--cap-add",
        "--cap-drop",
        "--perms",
        "--size",
    ];
    const TWO: &[&str] = &[
        "--setenv",
        "--bind",
        "--bind-try",
        "--dev-bind",
        "--dev-bind-try",
        "--ro-bind",
        "--ro-bind-try",
        "--file",
        "--bind-data",
        "--ro-bind-data",
        "--symlink",
        "--chmod",
        "--bind-fd",
        "--ro-bind-fd",
        "--overlay-src",
        "--tmp-overlay",
        "--ro-overlay",
    ];
    const THREE: &[&str] = &["--overlay"];
    let mut env = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let text = word.text.as_str();
        if !word.literal || !text.starts_with("--") {
            break;
        }
        if text == "--" {
            i += 1;
            break;
        }
        if text == "--setenv"
            && let (Some(name), Some(value)) = (words.get(i + 1), words.get(i + 2))
        {
            env.push(Word {
                text: format!("{}={}", name.text, value.text),
                literal: name.literal && value.literal,
            });
        }
        i += if ONE.contains(&text) {
            2
        } else if TWO.contains(&text) {
            3
        } else if THREE.contains(&text) {
            4
        } else {
            1
        };
    }
    match words.get(i..) {
        Some(command) if !command.is_empty() => Inner::Command(Run {
            words: command.to_vec(),
            env,
        }),
        _ => Inner::None,
    }
}

/// `setarch ARCH [flags] [COMMAND…]` (and `linux32`, … with the arch in the name).
fn setarch(name: &str, words: &[Word]) -> Inner {
    let mut rest = words;
    if name == "setarch" {
        match rest.first() {
            Some(arch) if !arch.text.starts_with('-') => rest = &rest[1..],
            _ => return Inner::None,
        }
    }
    let mut i = 0;
    while let Some(word) = rest.get(i) {
        if word.text == "--" {
            i += 1;
            break;
        }
        if !word.literal || !word.text.starts_with('-') {
            break;
        }
        i += 1;
    }
    match rest.get(i..) {
        Some(command) if !command.is_empty() => Inner::Command(Run::of(command)),
        _ => Inner::Opaque(format!(
            "`{name}` without a command starts a shell that reads its commands from its input"
        )),
    }
}

/// A project runner (`uv run CMD`, `docker exec C CMD`, `ssh HOST CMD`): judged as itself;
/// what follows the subcommand may be what it runs.
fn runner(name: &str, words: &[Word], rest: &[Word]) -> Inner {
    let Some((_, subcommands)) = RUNNERS.iter().find(|(runner, _)| *runner == name) else {
        return Inner::None;
    };
    let after = if subcommands.is_empty() {
        rest
    } else {
        match rest
            .iter()
            .position(|w| subcommands.contains(&w.text.as_str()))
        {
            Some(at) => &rest[at + 1..],
            None => return Inner::None,
        }
    };
    let _ = words;
    let mut scripts: Vec<String> = after
        .iter()
        .filter(|w| w.literal && w.text.contains(char::is_whitespace))
        .map(|w| w.text.clone())
        .collect();
    if name == "ssh" {
        // The remote command is the words after the host, joined.
        for start in 0..after.len() {
            if after[start..].iter().all(|w| w.literal) {
                scripts.push(
                    after[start..]
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
        }
    }
    Inner::Maybe {
        commands: suffixes(after),
        scripts,
    }
}

/// `bash [options] -c SCRIPT [name args…]`: the script; `bash [options] FILE` runs a file
/// (judged as itself); `bash` or `bash -s` reads its script from its input.
fn shell_script(name: &str, words: &[Word]) -> Inner {
    let mut i = 0;
    let mut command_string = false;
    let mut from_input = false;
    while i < words.len() {
        let text = words[i].text.as_str();
        if !words[i].literal {
            break;
        }
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if matches!(text, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            command_string |= cluster.contains('c');
            from_input |= cluster.contains('s');
            i += 1;
            continue;
        }
        if text.starts_with("--") || text.starts_with('+') {
            i += 1;
            continue;
        }
        break;
    }
    if command_string {
        return match words.get(i) {
            Some(script) if script.literal => Inner::Script(script.text.clone()),
            Some(script) => Inner::Opaque(format!(
                "`{name} -c` runs `{}`, a script only known when it runs",
                script.text
            )),
            None => Inner::Opaque(format!("`{name} -c` without a script")),
        };
    }
    match words.get(i) {
        _ if from_input => Inner::Opaque(format!(
            "`{name}` runs a script from its input, which cannot be checked"
        )),
        None => Inner::Opaque(format!(
            "`{name}` runs a script from its input, which cannot be checked"
        )),
        Some(file) if !file.literal => Inner::Opaque(format!(
            "`{name}` runs the script `{}`, only known when it runs",
            file.text
        )),
        Some(file) if reads_input(&file.text) => Inner::Opaque(format!(
            "`{name} {}` runs a script from its input, which cannot be checked",
            file.text
        )),
        Some(_) => Inner::None,
    }
}

/// A shell whose language is not bash's: a script it is given cannot be parsed here.
fn other_shell(name: &str, words: &[Word]) -> Inner {
    let script_flags = [
        "-c",
        "--command",
        "-Command",
        "-command",
        "-e",
        "-EncodedCommand",
    ];
    if words
        .iter()
        .any(|w| script_flags.contains(&w.text.as_str()))
    {
        return Inner::Opaque(format!(
            "`{name}` runs a script in a language other than bash's, which is not checked"
        ));
    }
    if words.iter().all(|w| w.text.starts_with('-')) {
        return Inner::Opaque(format!(
            "`{name}` runs a script from its input, which cannot be checked"
        ));
    }
    Inner::None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Word> {
        text.split(' ').map(Word::literal).collect()
    }

    fn command(text: &str) -> Inner {
        Inner::Command(Run::of(&words(text)))
    }

    fn runs(text: &str) -> Option<String> {
        match inner(&words(text)) {
            Inner::Command(run) => Some(
                run.words
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Inner::Script(script) => Some(format!("script: {script}")),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn wrappers_yield_the_command_they_run() {
        assert_eq!(inner(&words("sudo -u root rm -rf /")), command("rm -rf /"));
        assert!(
            matches!(inner(&words("env -i A=1 B=2 make")), Inner::Command(r) if r.words == words("make") && r.env.len() == 2)
        );
        assert_eq!(
            inner(&words("timeout -s KILL 10 cargo test")),
            command("cargo test")
        );
        assert_eq!(inner(&words("nice -n 5 make")), command("make"));
        assert_eq!(inner(&words("nice -10 make")), command("make"));
        assert_eq!(inner(&words("nohup ./server")), command("./server"));
        assert_eq!(inner(&words("xargs -I {} rm {}")), command("rm {}"));
        assert!(
            matches!(inner(&words("xargs -0 rm -f")), Inner::Command(r) if r.words.len() == 3 && r.words[2].text == "…")
        );
        assert_eq!(inner(&words("command -v git")), Inner::None);
        assert_eq!(inner(&words("/usr/bin/sudo ls")), command("ls"));
        assert_eq!(
            inner(&words("find . -name *.o -exec rm {} ; -exec echo {} +")),
            Inner::Commands(vec![words("rm {}"), words("echo {}")])
        );
        assert_eq!(
            inner(&words("bash -lc git status")),
            Inner::Script("git".to_string())
        );
        assert_eq!(inner(&words("ls -la")), Inner::None);
    }

    #[test]
    fn the_whole_family_of_wrappers_is_looked_through() {
        for (line, expected) in [
            ("setsid -f rm -rf x", "rm -rf x"),
            ("taskset -c 0-3 rm -rf x", "rm -rf x"),
            ("taskset 0x1 rm -rf x", "rm -rf x"),
            ("flock -w 5 /tmp/lock rm -rf x", "rm -rf x"),
            ("flock /tmp/lock -c rm", "script: rm"),
            ("chrt -f 10 rm -rf x", "rm -rf x"),
            ("ionice -c 3 rm -rf x", "rm -rf x"),
            ("unshare -r -n rm -rf x", "rm -rf x"),
            ("nsenter -t 1 -m rm -rf x", "rm -rf x"),
            ("chroot / rm -rf x", "rm -rf x"),
            ("runuser -u nobody -- rm -rf x", "rm -rf x"),
            ("su -c rm root", "script: rm"),
            ("su - root -c rm", "script: rm"),
            ("watch -n 1 rm -rf x", "script: rm -rf x"),
            ("watch -x rm -rf x", "rm -rf x"),
            ("script -qc rm /dev/null", "script: rm"),
            ("script -q -c rm /dev/null", "script: rm"),
            ("pkexec rm -rf x", "rm -rf x"),
            ("systemd-run --user -p Nice=5 rm -rf x", "rm -rf x"),
            ("setpriv --reuid=1000 --clear-groups rm -rf x", "rm -rf x"),
            ("prlimit --nofile=10 rm -rf x", "rm -rf x"),
            ("numactl -N 0 rm -rf x", "rm -rf x"),
            ("strace -f -o out rm -rf x", "rm -rf x"),
            ("valgrind --tool=memcheck rm -rf x", "rm -rf x"),
            ("fakeroot rm -rf x", "rm -rf x"),
            ("bwrap --ro-bind / / --dev /dev rm -rf x", "rm -rf x"),
            ("busybox rm -rf x", "rm -rf x"),
            ("setarch x86_64 -R rm -rf x", "rm -rf x"),
            ("linux32 rm -rf x", "rm -rf x"),
            ("builtin eval x", "eval x"),
            ("coproc rm -rf x", "rm -rf x"),
            ("trap rm EXIT", "script: rm"),
            ("stdbuf -oL rm -rf x", "rm -rf x"),
            ("time -p rm -rf x", "rm -rf x"),
            ("exec -a name rm -rf x", "rm -rf x"),
            ("sg staff -c rm", "script: rm"),
            ("xvfb-run -a rm -rf x", "rm -rf x"),
            ("gosu nobody rm -rf x", "rm -rf x"),
        ] {
            assert_eq!(runs(line).as_deref(), Some(expected), "{line}");
        }
    }

    #[test]
    fn environment_set_by_a_wrapper_is_reported() {
        let Inner::Command(run) = inner(&words("sudo LD_PRELOAD=x.so ls")) else {
            panic!()
        };
        assert_eq!(run.words, words("ls"));
        assert_eq!(run.env, words("LD_PRELOAD=x.so"));
        let Inner::Command(run) = inner(&words("env BASH_FUNC_ls%%=x bash")) else {
            panic!()
        };
        assert_eq!(run.env[0].text, "BASH_FUNC_ls%%=x");
        let Inner::Command(run) = inner(&words("systemd-run -E LD_PRELOAD=x ls")) else {
            panic!()
        };
        assert_eq!(run.env[0].text, "LD_PRELOAD=x");
    }

    #[test]
    fn an_unknown_option_leaves_every_possible_command_to_deny_rules() {
        let Inner::Maybe { commands, .. } = inner(&words("setsid --frobnicate rm -rf x")) else {
            panic!()
        };
        assert!(commands.contains(&words("rm -rf x")), "{commands:?}");
        let Inner::Maybe { commands, scripts } = inner(&words("uv run --with x pytest -q")) else {
            panic!()
        };
        assert!(commands.contains(&words("pytest -q")), "{commands:?}");
        assert!(scripts.is_empty());
        assert_eq!(inner(&words("uv sync")), Inner::None);
    }

    #[test]
    fn what_cannot_be_known_before_it_runs_is_opaque() {
        for line in [
            "eval ls",
            "bash",
            "sh -s",
            "bash /dev/stdin",
            "source /dev/stdin",
            ". /proc/self/fd/0",
            "alias ll=rm",
            "hash -p /tmp/x ls",
            "enable -f ./x.so x",
            "fc -s",
            "compgen -W x",
            "mapfile -C cb -c 1",
            "parallel rm ::: a",
            "su root",
            "script out.log",
            "unshare -r",
            "coproc NAME { rm x ; }",
            "fish -c rm",
            "sudo -s",
        ] {
            assert!(matches!(inner(&words(line)), Inner::Opaque(_)), "{line}");
        }
        assert_eq!(inner(&words("bash script.sh")), Inner::None);
        assert_eq!(inner(&words("source venv/bin/activate")), Inner::None);
        assert_eq!(inner(&words("trap - EXIT")), Inner::None);
        assert_eq!(inner(&words("alias")), Inner::None);
        let script = vec![
            Word::literal("bash"),
            Word::literal("-c"),
            Word::unknown("\"$CMD\""),
        ];
        assert!(matches!(inner(&script), Inner::Opaque(why) if why.contains("$CMD")));
    }
}
