//! Text bash evaluates when the command runs, which a rule cannot judge unless its value is
//! known before. Arithmetic evaluates variables recursively, and a value such as
//! `a[$(rm -rf ~)]` runs the command in its subscript: `x='a[$(…)]'; echo $((x))`. The
//! same happens to a variable *name* with a subscript given to `printf -v`, `read`,
//! `declare`, `test -v`, `unset`.
//!
//! So every variable an arithmetic context reads must have a value known before the
//! command runs: set in the same command only to numbers, to arithmetic results, or to
//! literal text without a subscript (whose names are known in turn). One set from input, a
//! command's output, a file name or another variable — or not set in the command at all —
//! is only known when it runs, and the command cannot be judged. A few variables the shell
//! itself keeps numeric (`$#`, `RANDOM`, `LINENO`, …) are known.

use std::collections::{HashMap, HashSet};

/// How a variable gets its value in the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A number: an arithmetic result.
    Number,
    /// This literal text.
    Literal(String),
    /// Only known when it runs (input, a command's output, another variable…).
    Unknown,
}

/// Variables the shell keeps numeric, known without being set.
const NUMERIC: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "EPOCHSECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "OPTIND",
    "SHLVL",
    "COLUMNS",
    "LINES",
    "HISTCMD",
    "BASH_SUBSHELL",
    "BASH_LINENO",
];

/// One place arithmetic is evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Use {
    /// The arithmetic text as written.
    text: String,
    /// The array it indexes, for a subscript (an associative array's is no arithmetic).
    array: Option<String>,
}

/// What the command evaluates and how its variables are set, gathered over the whole
/// command (scripts in it included) and judged at the end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluation {
    bindings: HashMap<String, Vec<Binding>>,
    uses: Vec<Use>,
    associative: HashSet<String>,
    integers: HashSet<String>,
}

impl Evaluation {
    /// `name` (`a` for `a[1]`) gets a value in the command.
    pub fn bind(&mut self, name: &str, binding: Binding) {
        let name = name.split('[').next().unwrap_or(name);
        self.bindings
            .entry(name.to_string())
            .or_default()
            .push(binding);
    }

    /// `text` is evaluated as arithmetic (`$((text))`, `((text))`, `let text`, an offset).
    pub fn arithmetic(&mut self, text: &str) {
        if let Ok(tokens) = scan(text) {
            for token in tokens {
                if let Token::Assigned(name) = token {
                    self.bind(&name, Binding::Number);
                }
            }
        }
        self.uses.push(Use {
            text: text.to_string(),
            array: None,
        });
    }

    /// `index` is the subscript of `array` (`a[index]`): arithmetic unless `array` is
    /// associative.
    pub fn subscript(&mut self, array: &str, index: &str) {
        if matches!(index.trim(), "@" | "*") {
            return;
        }
        self.uses.push(Use {
            text: index.to_string(),
            array: Some(array.to_string()),
        });
    }

    /// `declare -A name`: its subscripts are strings.
    pub fn associative(&mut self, name: &str) {
        self.associative.insert(name.to_string());
    }

    /// `declare -i name`: every value it is given is evaluated as arithmetic.
    pub fn integer(&mut self, name: &str) {
        self.integers.insert(name.to_string());
    }

    /// A variable name given as an argument (`printf -v NAME`, `read NAME`, `test -v
    /// NAME`): its subscript, if any, is evaluated. `Err` says why a name that is not a
    /// literal cannot be judged.
    pub fn name_argument(
        &mut self,
        command: &str,
        name: Option<&str>,
        shown: &str,
    ) -> Result<(), String> {
        let Some(name) = name else {
            return Err(format!(
                "`{command}` is given the variable name `{shown}`, only known when it runs (a \
                 name with a subscript runs the commands in it)"
            ));
        };
        if let Some((array, rest)) = name.split_once('[')
            && let Some(index) = rest.strip_suffix(']')
        {
            self.subscript(array, index);
        }
        Ok(())
    }

    pub fn merge(&mut self, other: Evaluation) {
        for (name, bindings) in other.bindings {
            self.bindings.entry(name).or_default().extend(bindings);
        }
        self.uses.extend(other.uses);
        self.associative.extend(other.associative);
        self.integers.extend(other.integers);
    }

    /// Why the command cannot be judged, one reason per evaluation that reads something
    /// only known when it runs.
    pub fn unverifiable(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        for used in &self.uses {
            if used
                .array
                .as_ref()
                .is_some_and(|a| self.associative.contains(a))
            {
                continue;
            }
            if let Err(why) = self.judge_text(&used.text) {
                reasons.push(format!(
                    "the arithmetic `{}` {why}, and an arithmetic value can run commands \
                     (`a[$(…)]`)",
                    used.text.trim()
                ));
            }
        }
        let mut integers: Vec<&String> = self.integers.iter().collect();
        integers.sort();
        for name in integers {
            for binding in self.bindings.get(name).into_iter().flatten() {
                let verdict = match binding {
                    Binding::Number => Ok(()),
                    Binding::Literal(text) => self.judge_text(text),
                    Binding::Unknown => Err("is given a value only known when it runs".to_string()),
                };
                if let Err(why) = verdict {
                    reasons.push(format!(
                        "the integer variable `{name}` {why}, and an arithmetic value can run \
                         commands (`a[$(…)]`)"
                    ));
                }
            }
        }
        reasons.sort();
        reasons.dedup();
        reasons
    }

    /// Whether arithmetic over `text` reads only known values.
    fn judge_text(&self, text: &str) -> Result<(), String> {
        for token in scan(text)? {
            if let Token::Ref(name) = token {
                self.known(&name, &mut Vec::new())?;
            }
        }
        Ok(())
    }

    fn known(&self, name: &str, visiting: &mut Vec<String>) -> Result<(), String> {
        if visiting.iter().any(|v| v == name) {
            return Ok(());
        }
        let Some(bindings) = self.bindings.get(name) else {
            return if NUMERIC.contains(&name) {
                Ok(())
            } else {
                Err(format!(
                    "reads `{name}`, which the command does not set, so its value is only known \
                     when it runs"
                ))
            };
        };
        visiting.push(name.to_string());
        for binding in bindings {
            match binding {
                Binding::Number => {}
                Binding::Unknown => {
                    return Err(format!(
                        "reads `{name}`, which is given a value only known when it runs"
                    ));
                }
                Binding::Literal(text) => {
                    if text.contains('[') {
                        return Err(format!(
                            "reads `{name}`, whose value `{text}` has a subscript"
                        ));
                    }
                    for token in scan(text)? {
                        let (Token::Ref(inner) | Token::Assigned(inner)) = token;
                        self.known(&inner, visiting)?;
                    }
                }
            }
        }
        visiting.pop();
        Ok(())
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    /// A variable read.
    Ref(String),
    /// A variable given a number (`n = …`).
    Assigned(String),
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The variables arithmetic `text` reads and assigns; `Err` when it evaluates a command's
/// output or the command's arguments.
fn scan(text: &str) -> Result<Vec<Token>, String> {
    let b = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let name_end = |from: usize| {
        let mut end = from;
        while end < b.len() && is_name_char(b[end]) {
            end += 1;
        }
        end
    };
    while i < b.len() {
        let c = b[i];
        if c == b'`' {
            return Err("evaluates a command's output".to_string());
        }
        if c == b'$' {
            match b.get(i + 1).copied() {
                Some(b'(') if b.get(i + 2) == Some(&b'(') => i += 3,
                Some(b'(') => return Err("evaluates a command's output".to_string()),
                Some(b'[') => i += 2,
                Some(b'{') => {
                    let j = i + 2;
                    match b.get(j).copied() {
                        Some(b'#') => i = name_end(j + 1).max(j + 1),
                        Some(b'!') => {
                            return Err("reads a variable named by another's value".to_string());
                        }
                        Some(c) if is_name_start(c) => {
                            let end = name_end(j);
                            tokens.push(Token::Ref(text[j..end].to_string()));
                            i = end;
                        }
                        Some(c) if c.is_ascii_digit() || c == b'@' || c == b'*' => {
                            return Err("evaluates the command's arguments".to_string());
                        }
                        _ => i = j,
                    }
                }
                Some(c) if is_name_start(c) => {
                    let end = name_end(i + 1);
                    tokens.push(Token::Ref(text[i + 1..end].to_string()));
                    i = end;
                }
                Some(c) if c.is_ascii_digit() || c == b'@' || c == b'*' => {
                    return Err("evaluates the command's arguments".to_string());
                }
                _ => i += 2,
            }
            continue;
        }
        if c.is_ascii_digit() {
            // 42, 0x2a, 16#2a, 2#101: no variable in them.
            while i < b.len() && (is_name_char(b[i]) || b[i] == b'#' || b[i] == b'@') {
                i += 1;
            }
            continue;
        }
        if is_name_start(c) {
            let end = name_end(i);
            let name = text[i..end].to_string();
            let before = text[..i].trim_end();
            let after = text[end..].trim_start();
            let plain_assignment = after.starts_with('=') && !after.starts_with("==");
            let compound = ["+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="]
                .iter()
                .any(|op| after.starts_with(op))
                || after.starts_with("++")
                || after.starts_with("--")
                || before.ends_with("++")
                || before.ends_with("--");
            if plain_assignment {
                tokens.push(Token::Assigned(name));
            } else {
                if compound {
                    tokens.push(Token::Assigned(name.clone()));
                }
                tokens.push(Token::Ref(name));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(setup: impl FnOnce(&mut Evaluation)) -> Vec<String> {
        let mut evaluation = Evaluation::default();
        setup(&mut evaluation);
        evaluation.unverifiable()
    }

    #[test]
    fn known_values_pass_and_others_are_named() {
        assert!(judged(|e| e.arithmetic("1 + 2 * 0x10 + 16#ff")).is_empty());
        assert!(
            judged(|e| {
                e.bind("i", Binding::Literal("0".into()));
                e.arithmetic("i++");
                e.arithmetic("i * 2 + RANDOM + $# + $?");
            })
            .is_empty()
        );
        assert!(
            judged(|e| {
                e.arithmetic("n = 5");
                e.arithmetic("n + 1");
            })
            .is_empty()
        );
        let reasons = judged(|e| {
            e.bind("x", Binding::Literal("a[$(id)]".into()));
            e.arithmetic("x");
        });
        assert!(reasons[0].contains("has a subscript"), "{reasons:?}");
        let reasons = judged(|e| e.arithmetic("$(wc -l < f) + 1"));
        assert!(reasons[0].contains("command's output"), "{reasons:?}");
        let reasons = judged(|e| e.arithmetic("$1 + 1"));
        assert!(reasons[0].contains("arguments"), "{reasons:?}");
        let reasons = judged(|e| e.arithmetic("unset_here"));
        assert!(reasons[0].contains("does not set"), "{reasons:?}");
        let reasons = judged(|e| {
            e.bind("y", Binding::Unknown);
            e.bind("x", Binding::Literal("y + 1".into()));
            e.arithmetic("x");
        });
        assert!(reasons[0].contains("`y`"), "{reasons:?}");
    }

    #[test]
    fn associative_subscripts_are_strings_and_integer_variables_arithmetic() {
        assert!(
            judged(|e| {
                e.associative("m");
                e.bind("k", Binding::Unknown);
                e.subscript("m", "$k");
            })
            .is_empty()
        );
        assert!(
            !judged(|e| {
                e.bind("k", Binding::Unknown);
                e.subscript("a", "$k");
            })
            .is_empty()
        );
        assert!(
            !judged(|e| {
                e.integer("n");
                e.bind("n", Binding::Unknown);
            })
            .is_empty()
        );
        assert!(judged(|e| e.subscript("a", "@")).is_empty());
    }
}
