//! Splitting a shell command into the simple commands that permission rules judge, with a
//! real bash parser (tree-sitter-bash): `a && b`, `a || b`, `a; b`, `a | b`, newlines,
//! `$(…)`, backticks, `<(…)`, subshells, loops and function bodies all yield their inner
//! commands. Also notes whether the command writes files through redirections, since a
//! rule such as `bash(echo *)` must not thereby allow `echo x > ~/.bashrc`.

use tree_sitter::{Node, Parser};

/// What a command line is made of, as far as permissions care.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CommandShape {
    /// Every simple command, whitespace collapsed, in source order; commands nested in a
    /// substitution come after the command that contains them.
    pub segments: Vec<String>,
    /// Some redirection writes to a file (not `/dev/null`, not a file descriptor).
    pub writes_files: bool,
}

/// Parse `command`; `None` when bash would not accept it (or the parser gave up), in which
/// case no rule can allow it.
pub fn parse(command: &str) -> Option<CommandShape> {
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
    collect(root, command.as_bytes(), &mut shape)?;
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

fn collect(node: Node<'_>, source: &[u8], shape: &mut CommandShape) -> Option<()> {
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
    }
    if kind == "file_redirect" && redirect_writes(node, source) {
        shape.writes_files = true;
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        collect(child, source, shape)?;
    }
    Some(())
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
        assert_eq!(segments("FOO=1 make"), ["FOO=1 make"]);
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
