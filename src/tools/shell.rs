//! Splitting a shell command into the simple commands that permission rules judge, with a
//! real bash parser (tree-sitter-bash): `a && b`, `a || b`, `a; b`, `a | b`, newlines,
//! `$(…)`, backticks, `<(…)`, subshells, loops and function bodies all yield their inner
//! commands. Wrappers are looked through (`wrappers`): `sudo rm x` yields `rm x` too, and
//! `bash -c 'a; b'` the commands of its script. Also notes whether the command writes files
//! through redirections, since a rule such as `bash(echo *)` must not thereby allow
//! `echo x > ~/.bashrc`, and what in it cannot be known before it runs (`eval`).

use super::wrappers::{self, Inner, Word};
use tree_sitter::{Node, Parser};

/// How deep wrappers and scripts in scripts are looked into before giving up.
const MAX_DEPTH: usize = 8;

/// What a command line is made of, as far as permissions care.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CommandShape {
    /// Every simple command, whitespace collapsed, in source order; commands nested in a
    /// substitution come after the command that contains them.
    pub segments: Vec<String>,
    /// Some redirection writes to a file (not `/dev/null`, not a file descriptor).
    pub writes_files: bool,
    /// Indices of `segments` that are wrappers (`sudo x`, `FOO=1 x`, `bash -c '…'`): what
    /// they run follows as segments of its own, and allow rules judge that instead.
    pub wrappers: Vec<usize>,
    /// Why parts of the command cannot be judged before they run (`eval`, a script that is
    /// not a literal): such a command always asks.
    pub opaque: Vec<String>,
}

impl CommandShape {
    /// The segments allow rules must cover: every one but the wrappers.
    pub fn judged(&self) -> impl Iterator<Item = &String> {
        self.segments
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.wrappers.contains(i))
            .map(|(_, s)| s)
    }
}

/// Parse `command`; `None` when bash would not accept it (or the parser gave up), in which
/// case no rule can allow it.
pub fn parse(command: &str) -> Option<CommandShape> {
    parse_at(command, 0)
}

fn parse_at(command: &str, depth: usize) -> Option<CommandShape> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    let tree = parser.parse(command, None)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut shape = CommandShape::default();
    collect(root, command.as_bytes(), &mut shape, depth)?;
    Some(shape)
}

/// Node kinds that are one simple command: what a rule's pattern is matched against.
const SIMPLE_COMMANDS: &[&str] = &[
    "command",
    "declaration_command",
    "unset_command",
    "test_command",
    "variable_assignment",
    "variable_assignments",
];

fn collect(node: Node<'_>, source: &[u8], shape: &mut CommandShape, depth: usize) -> Option<()> {
    if node.is_error() || node.is_missing() {
        return None;
    }
    let kind = node.kind();
    let is_simple = SIMPLE_COMMANDS.contains(&kind);
    // An assignment inside a command (`FOO=1 make`) is part of that command's text.
    let nested_assignment = kind == "variable_assignment"
        && node
            .parent()
            .is_some_and(|p| SIMPLE_COMMANDS.contains(&p.kind()));
    if is_simple && !nested_assignment {
        shape
            .segments
            .push(collapse_whitespace(node.utf8_text(source).ok()?));
        if kind == "command" {
            let index = shape.segments.len() - 1;
            let (words, assigned) = command_words(node, source);
            if assigned && !words.is_empty() {
                // `VAR=… cmd` runs `cmd`.
                shape.wrappers.push(index);
                shape.segments.push(join(&words));
                let index = shape.segments.len() - 1;
                look_inside(&words, index, shape, depth);
            } else {
                look_inside(&words, index, shape, depth);
            }
        }
    }
    if kind == "file_redirect" && redirect_writes(node, source) {
        shape.writes_files = true;
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        collect(child, source, shape, depth)?;
    }
    Some(())
}

/// Add what the simple command `words` (segment `index`) runs, if it is a wrapper.
fn look_inside(words: &[Word], index: usize, shape: &mut CommandShape, depth: usize) {
    if depth >= MAX_DEPTH {
        shape
            .opaque
            .push("wrappers nested too deeply to check".to_string());
        return;
    }
    match wrappers::inner(words) {
        Inner::None => {}
        Inner::Command(inner) => {
            shape.wrappers.push(index);
            shape.segments.push(join(&inner));
            let inner_index = shape.segments.len() - 1;
            look_inside(&inner, inner_index, shape, depth + 1);
        }
        // `find` itself runs too, so it stays judged.
        Inner::Commands(commands) => {
            for inner in commands {
                shape.segments.push(join(&inner));
                let inner_index = shape.segments.len() - 1;
                look_inside(&inner, inner_index, shape, depth + 1);
            }
        }
        Inner::Script(script) => {
            shape.wrappers.push(index);
            match parse_at(&script, depth + 1) {
                Some(inner) => {
                    let offset = shape.segments.len();
                    shape.segments.extend(inner.segments);
                    shape
                        .wrappers
                        .extend(inner.wrappers.iter().map(|i| i + offset));
                    shape.opaque.extend(inner.opaque);
                    shape.writes_files |= inner.writes_files;
                }
                None => shape.opaque.push(format!(
                    "the script `{}` does not parse",
                    collapse_whitespace(&script)
                )),
            }
        }
        Inner::Opaque(why) => shape.opaque.push(why),
    }
}

fn join(words: &[Word]) -> String {
    collapse_whitespace(
        &words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The words of a `command` node (name first; literals unquoted) and whether variable
/// assignments come before it.
fn command_words(node: Node<'_>, source: &[u8]) -> (Vec<Word>, bool) {
    let mut words = Vec::new();
    let mut assigned = false;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "variable_assignment" => assigned = true,
            kind if kind.ends_with("redirect") => {}
            _ => words.push(word(child, source)),
        }
    }
    (words, assigned)
}

fn word(node: Node<'_>, source: &[u8]) -> Word {
    match literal(node, source) {
        Some(text) => Word {
            text,
            literal: true,
        },
        None => Word {
            text: node.utf8_text(source).unwrap_or_default().to_string(),
            literal: false,
        },
    }
}

/// The value of a word that has no expansion in it, quotes and escapes removed.
fn literal(node: Node<'_>, source: &[u8]) -> Option<String> {
    let text = node.utf8_text(source).ok()?;
    let mut cursor = node.walk();
    match node.kind() {
        "word" | "number" => Some(unescape(text, |_| true)),
        "raw_string" => Some(text.strip_prefix('\'')?.strip_suffix('\'')?.to_string()),
        "string" => {
            if node
                .named_children(&mut cursor)
                .any(|c| c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            Some(unescape(inner, |c| {
                matches!(c, '"' | '\\' | '$' | '`' | '\n')
            }))
        }
        "concatenation" | "command_name" => {
            let parts: Option<Vec<String>> = node
                .named_children(&mut cursor)
                .map(|c| literal(c, source))
                .collect();
            let parts = parts?;
            (!parts.is_empty()).then(|| parts.concat())
        }
        _ => None,
    }
}

/// Remove the backslash before each character `escapable` accepts (a backslash before a
/// newline removes both).
fn unescape(text: &str, escapable: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(next)) if escapable(next) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether a `file_redirect` opens a file for writing.
fn redirect_writes(node: Node<'_>, source: &[u8]) -> bool {
    let mut cursor = node.walk();
    let operator = node
        .children(&mut cursor)
        .find(|c| !c.is_named())
        .and_then(|c| c.utf8_text(source).ok())
        .unwrap_or("");
    if !operator.contains('>') {
        return false;
    }
    let destination = node
        .child_by_field_name("destination")
        .and_then(|d| d.utf8_text(source).ok())
        .unwrap_or("")
        .trim();
    let duplicates_descriptor = operator.ends_with('&')
        && (destination == "-" || destination.chars().all(|c| c.is_ascii_digit()));
    let harmless_device = matches!(destination, "/dev/null" | "/dev/stdout" | "/dev/stderr");
    !(duplicates_descriptor || harmless_device)
}

/// Runs of whitespace (and line continuations) become one space, so a rule is not
/// defeated by formatting.
fn collapse_whitespace(text: &str) -> String {
    text.replace("\\\n", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(command: &str) -> Vec<String> {
        parse(command)
            .unwrap_or_else(|| panic!("did not parse: {command}"))
            .segments
    }

    #[test]
    fn splits_lists_pipelines_and_newlines() {
        assert_eq!(
            segments("git status && rm -rf ~"),
            ["git status", "rm -rf ~"]
        );
        assert_eq!(segments("a || b; c | d\ne"), ["a", "b", "c", "d", "e"]);
        assert_eq!(segments("cargo   test \\\n  --all"), ["cargo test --all"]);
    }

    #[test]
    fn finds_commands_inside_substitutions_and_blocks() {
        assert_eq!(
            segments("echo $(rm -rf /tmp/x)"),
            ["echo $(rm -rf /tmp/x)", "rm -rf /tmp/x"]
        );
        assert_eq!(segments("echo `whoami`"), ["echo `whoami`", "whoami"]);
        assert_eq!(segments("diff <(ls a) b"), ["diff <(ls a) b", "ls a"]);
        assert_eq!(segments("for f in *.rs; do wc -l $f; done"), ["wc -l $f"]);
        assert_eq!(segments("(cd x && make)"), ["cd x", "make"]);
        assert_eq!(
            segments("if test -f a; then cat a; fi"),
            ["test -f a", "cat a"]
        );
        assert_eq!(segments("FOO=1 make"), ["FOO=1 make", "make"]);
        assert_eq!(segments("X=$(id)"), ["X=$(id)", "id"]);
        assert_eq!(segments("export A=1"), ["export A=1"]);
    }

    #[test]
    fn notices_redirections_that_write_files() {
        assert!(parse("echo hi > notes.txt").unwrap().writes_files);
        assert!(parse("echo hi >> ~/.bashrc").unwrap().writes_files);
        assert!(parse("ls &> out.log").unwrap().writes_files);
        assert!(!parse("cargo test 2>&1 | tail").unwrap().writes_files);
        assert!(!parse("make > /dev/null 2>&1").unwrap().writes_files);
        assert!(!parse("wc -l < input.txt").unwrap().writes_files);
        assert!(!parse("cat <<EOF\nhi\nEOF").unwrap().writes_files);
    }

    #[test]
    fn refuses_what_bash_would_not_parse() {
        assert_eq!(parse("echo 'unterminated"), None);
        assert_eq!(parse("if then fi ("), None);
    }
}
