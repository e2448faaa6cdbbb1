//! The wrappers whose command lines need more than an option table: `trap`, `coproc`,
//! `env`, `xargs`, `find -exec`, `su`/`runuser`, `sg`, `script`, `flock`, `bwrap`,
//! `setarch`, and the project runners (`uv run`, `docker exec`, `ssh HOST`).

use super::{Inner, Run, Word, by_spec, joined_script, script_word, suffixes, unsure};
use crate::tools::wrapper_specs::{Bare, RUNNERS, Spec};

/// `trap 'SCRIPT' SIGNAL…`: the script runs later; judged like `bash -c`.
pub(super) fn trap(words: &[Word]) -> Inner {
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
pub(super) fn coproc(words: &[Word]) -> Inner {
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

pub(super) fn env(words: &[Word]) -> Inner {
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

pub(super) fn xargs(words: &[Word]) -> Inner {
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
pub(super) fn find_exec(words: &[Word]) -> Inner {
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
            match super::inner(&command) {
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
pub(super) fn su(name: &str, words: &[Word]) -> Inner {
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
pub(super) fn sg(words: &[Word]) -> Inner {
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
pub(super) fn script(words: &[Word]) -> Inner {
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
pub(super) fn flock(words: &[Word]) -> Inner {
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
pub(super) fn bwrap(words: &[Word]) -> Inner {
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
pub(super) fn setarch(name: &str, words: &[Word]) -> Inner {
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
pub(super) fn runner(name: &str, words: &[Word], rest: &[Word]) -> Inner {
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
