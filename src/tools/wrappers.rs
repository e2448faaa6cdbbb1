//! What a wrapper command runs, so that permission rules judge the inner command: `sudo`,
//! `doas`, `env [-i] [VAR=…]`, `timeout`, `nice`, `nohup`, `exec`, `command`, `time`,
//! `stdbuf`, `xargs`, `find … -exec … ;`, `VAR=… cmd` prefixes, and `bash|sh|zsh|dash|ksh
//! -c SCRIPT` with a literal script (parsed in turn). What cannot be known before it runs —
//! `eval`, a shell reading its script from its input, a script or command name that is not
//! a literal — is reported as opaque, and such a command always asks.
//!
//! Option tables are written here by hand: no crate describes these programs' command
//! lines, and only the options that take a value matter (to find where the command starts).

/// One word of a simple command: its value when it is a literal (quotes removed), else
/// the source text (`"$DIR"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub literal: bool,
}

#[cfg(test)]
impl Word {
    pub fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            literal: true,
        }
    }
}

/// What a wrapper runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Inner {
    /// Not a wrapper (or a wrapper that runs nothing, such as `command -v x`).
    None,
    /// The command it runs, as words.
    Command(Vec<Word>),
    /// Commands run one by one (`find -exec a ; -exec b ;`).
    Commands(Vec<Vec<Word>>),
    /// A shell script given literally (`bash -c '…'`), to be parsed.
    Script(String),
    /// What it runs cannot be known before it runs: why.
    Opaque(String),
}

const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh"];

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
    let name = first.text.rsplit('/').next().unwrap_or(&first.text);
    let rest = &words[1..];
    match name {
        "eval" => Inner::Opaque("`eval` runs a command made when it runs".to_string()),
        "sudo" | "doas" => after_options(
            rest,
            &[
                "-u", "-g", "-p", "-C", "-h", "-r", "-t", "-U", "-D", "-R", "-T",
            ],
            false,
        ),
        "env" => env(rest),
        "timeout" => {
            let command = after_options(rest, &["-s", "-k", "--signal", "--kill-after"], false);
            // The first word after the options is the duration.
            match command {
                Inner::Command(words) if words.len() > 1 => Inner::Command(words[1..].to_vec()),
                Inner::Command(_) => Inner::None,
                other => other,
            }
        }
        "nice" => after_options(rest, &["-n", "--adjustment"], true),
        "nohup" | "time" => after_options(rest, &[], false),
        "exec" => after_options(rest, &["-a"], false),
        "command" => {
            if rest.iter().any(|w| w.text == "-v" || w.text == "-V") {
                Inner::None
            } else {
                after_options(rest, &[], false)
            }
        }
        "stdbuf" => after_options(rest, &["-i", "-o", "-e"], false),
        "xargs" => {
            let replaces = rest
                .iter()
                .any(|w| w.text.starts_with("-I") || w.text.starts_with("--replace"));
            match after_options(
                rest,
                &[
                    "-I",
                    "-n",
                    "-P",
                    "-d",
                    "-E",
                    "-s",
                    "-L",
                    "-a",
                    "--arg-file",
                    "--max-args",
                    "--max-procs",
                    "--delimiter",
                    "--max-lines",
                    "--max-chars",
                    "--replace",
                    "--eof",
                ],
                false,
            ) {
                // The words it reads are appended (unless -I puts them in place), shown
                // as `…`, so that `rm -rf *` matches `xargs rm -rf`.
                Inner::Command(mut words) if !replaces => {
                    words.push(Word {
                        text: "…".to_string(),
                        literal: false,
                    });
                    Inner::Command(words)
                }
                // Without a command, xargs runs echo.
                other => other,
            }
        }
        "find" => find_exec(rest),
        shell if SHELLS.contains(&shell) => shell_script(name, rest),
        _ => Inner::None,
    }
}

/// The command after a wrapper's options: options start with `-` (`--` ends them); those in
/// `with_value` take the next word unless written `--opt=value` or `-oVALUE`. With
/// `numeric_flags`, `-10` (nice's old form) is an option too.
fn after_options(words: &[Word], with_value: &[&str], numeric_flags: bool) -> Inner {
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        if !word.literal {
            return Inner::Opaque(format!(
                "the wrapped command starts with `{}`, which is only known when it runs",
                word.text
            ));
        }
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        if numeric_flags && text[1..].chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let takes_value = with_value.contains(&text);
        i += if takes_value { 2 } else { 1 };
    }
    let command = words.get(i..).unwrap_or_default();
    if command.is_empty() {
        Inner::None
    } else {
        Inner::Command(command.to_vec())
    }
}

fn env(words: &[Word]) -> Inner {
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
            "-u" | "--unset" | "-C" | "--chdir" => i += 2,
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
            _ if text.starts_with('-') && text != "-" => i += 1,
            // VAR=value
            _ if text.split_once('=').is_some_and(|(name, _)| is_name(name)) => i += 1,
            _ => break,
        }
    }
    let command = words.get(i..).unwrap_or_default();
    if command.is_empty() {
        Inner::None
    } else {
        Inner::Command(command.to_vec())
    }
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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
        if text == "-o" || text == "+o" || text == "-O" || text == "+O" {
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
    if from_input || i >= words.len() {
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
        Inner::Command(words(text))
    }

    #[test]
    fn wrappers_yield_the_command_they_run() {
        assert_eq!(inner(&words("sudo -u root rm -rf /")), command("rm -rf /"));
        assert_eq!(inner(&words("env -i A=1 B=2 make")), command("make"));
        assert_eq!(
            inner(&words("timeout -s KILL 10 cargo test")),
            command("cargo test")
        );
        assert_eq!(inner(&words("nice -n 5 make")), command("make"));
        assert_eq!(inner(&words("nice -10 make")), command("make"));
        assert_eq!(inner(&words("nohup ./server")), command("./server"));
        assert_eq!(inner(&words("xargs -I {} rm {}")), command("rm {}"));
        assert!(
            matches!(inner(&words("xargs -0 rm -f")), Inner::Command(w) if w.len() == 3 && w[2].text == "…")
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
    fn what_cannot_be_known_before_it_runs_is_opaque() {
        assert!(matches!(inner(&words("eval ls")), Inner::Opaque(_)));
        assert!(matches!(inner(&words("bash")), Inner::Opaque(_)));
        assert!(matches!(inner(&words("sh -s")), Inner::Opaque(_)));
        assert_eq!(inner(&words("bash script.sh")), Inner::None);
        let script = vec![
            Word::literal("bash"),
            Word::literal("-c"),
            Word {
                text: "\"$CMD\"".into(),
                literal: false,
            },
        ];
        assert!(matches!(inner(&script), Inner::Opaque(why) if why.contains("$CMD")));
    }
}
