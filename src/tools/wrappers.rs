//! What a wrapper command runs, so that permission rules judge the inner command: the
//! programs of `wrapper_specs` (`sudo`, `timeout`, `setsid`, `flock`, `unshare`, …), `env`,
//! `xargs`, `find … -exec … ;`, `trap 'script'`, `coproc`, `su -c`, `script -c`, `watch`,
//! and `bash|sh|… -c SCRIPT` with a literal script (parsed in turn). Project runners (`uv
//! run`, `docker exec`, `ssh HOST`) are judged as themselves, and what they might run is
//! shown to deny rules. What cannot be known before it runs — `eval`, a shell reading its
//! script from its input, `source <(…)`, an alias, a script or command name that is not a
//! literal — is reported as opaque, and such a command asks where judging matters.

mod programs;
mod shells;

use super::environment::is_name;
pub use super::words::Word;
use super::wrapper_specs::{self, Bare, Spec};
use programs::{
    bwrap, coproc, env, find_exec, flock, runner, script, setarch, sg, su, trap, xargs,
};
use shells::{OTHER_SHELLS, SHELLS, other_shell, shell_script, source};

/// A command a wrapper runs: its words, and the `NAME=value` words it sets in its
/// environment (`env A=1 cmd`, `sudo A=1 cmd`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    pub words: Vec<Word>,
    pub env: Vec<Word>,
}

impl Run {
    pub(super) fn of(words: &[Word]) -> Run {
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
pub(super) fn by_spec(spec: &Spec, name: &str, words: &[Word], rest: &[Word]) -> Inner {
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
pub(super) fn unsure(words: &[Word]) -> Inner {
    Inner::Maybe {
        commands: suffixes(words.get(1..).unwrap_or_default()),
        scripts: Vec::new(),
    }
}

/// Every run of `words` that starts with a literal word that is not an option.
pub(super) fn suffixes(words: &[Word]) -> Vec<Vec<Word>> {
    (0..words.len())
        .filter(|&i| {
            words[i].literal && !words[i].text.starts_with('-') && !words[i].text.is_empty()
        })
        .map(|i| words[i..].to_vec())
        .collect()
}

/// A script given as one word: parsed when it is a literal.
pub(super) fn script_word(name: &str, word: &Word) -> Inner {
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
pub(super) fn joined_script(name: &str, words: &[Word]) -> Inner {
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

#[cfg(test)]
mod tests;
