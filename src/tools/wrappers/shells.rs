//! Shells and `source`: a literal script given with `-c` is parsed in turn; a script read
//! from the input, a substitution or a variable cannot be judged; a script file is judged as
//! the command that runs it (its commands are not read).

use super::{Inner, Word};

/// Bash and the shells that speak its language.
pub(super) const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh",
];

/// Shells whose scripts are not bash's language: their `-c` cannot be parsed here.
pub(super) const OTHER_SHELLS: &[&str] = &["fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"];

/// `source FILE` / `. FILE`: a file's commands are not judged (see docs/security.md), but
/// commands it reads from a substitution or its input cannot be judged at all.
pub(super) fn source(name: &str, words: &[Word]) -> Inner {
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
pub(super) fn reads_input(path: &str) -> bool {
    path == "/dev/stdin"
        || path == "-"
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// `bash [options] -c SCRIPT [name args…]`: the script; `bash [options] FILE` runs a file
/// (judged as itself); `bash` or `bash -s` reads its script from its input.
pub(super) fn shell_script(name: &str, words: &[Word]) -> Inner {
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
pub(super) fn other_shell(name: &str, words: &[Word]) -> Inner {
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
