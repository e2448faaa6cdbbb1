//! Splitting a shell command into the simple commands that permission rules judge, with a
//! real bash parser (tree-sitter-bash): `a && b`, `a || b`, `a; b`, `a | b`, newlines,
//! `$(…)`, backticks, `<(…)`, subshells, loops and function bodies all yield their inner
//! commands. Each command is judged by what bash will run: its words with quotes, escapes
//! and brace expansion resolved (`words`), wrappers looked through (`wrappers`: `sudo rm x`
//! yields `rm x`, `bash -c 'a; b'` the commands of its script), variables set for it that
//! change what runs noted (`environment`). Also notes whether the command writes files
//! through redirections, since a rule such as `bash(echo *)` must not thereby allow
//! `echo x > ~/.bashrc`, and what in it cannot be judged before it runs (`eval`, text bash
//! evaluates later: `evaluated`).

use super::environment;
use super::evaluated::{Binding, Evaluation};
use super::words::{self, Word};
use super::wrappers::{self, Inner, program_name};
use tree_sitter::{Node, Parser};

mod names;

/// How deep wrappers and scripts in scripts are looked into before giving up.
const MAX_DEPTH: usize = 8;

/// One simple command, as rules see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// The command as allow rules match it: its words, quotes and escapes removed (a word
    /// the shell would split is shown single-quoted), after the assignments it is given
    /// that change what runs.
    pub text: String,
    /// The command as written (whitespace collapsed), for a command that appears in the
    /// source: allow rules may match it too.
    pub raw: Option<String>,
    /// More spellings deny and ask rules match: without its assignments, and with its
    /// program named by the last part of its path (`/usr/bin/../bin/rm` → `rm`).
    pub spellings: Vec<String>,
    /// Whether allow rules must cover it. A wrapper is not (what it runs is); what a
    /// runner might run is only seen by deny and ask rules.
    pub judged: bool,
    /// Variables it is given that change what runs, and why: an allow rule covers it
    /// only when the rule names each of them.
    pub sets: Vec<(String, &'static str)>,
}

impl Segment {
    /// Every spelling deny and ask rules are matched against.
    pub fn all_spellings(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.text)
            .chain(self.raw.iter())
            .chain(self.spellings.iter())
    }
}

/// What a command line is made of, as far as permissions care.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CommandShape {
    /// Every simple command in source order; commands a command runs (a wrapper's, a
    /// substitution's) come after it.
    pub segments: Vec<Segment>,
    /// Some redirection writes to a file (not `/dev/null`, not a file descriptor).
    pub writes_files: bool,
    /// Why parts of the command cannot be judged before they run (`eval`, a script that is
    /// not a literal, arithmetic over a value only known then): such a command asks (see
    /// `Permissions::judge`).
    pub opaque: Vec<String>,
    /// What bash evaluates later, judged once the whole command is read.
    evaluation: Evaluation,
}

impl CommandShape {
    /// The segments allow rules must cover.
    pub fn judged(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().filter(|s| s.judged)
    }
}

/// Parse `command`; `None` when bash would not accept it (or the parser gave up), in which
/// case it cannot be judged.
pub fn parse(command: &str) -> Option<CommandShape> {
    let mut shape = parse_at(command, 0)?;
    let reasons = shape.evaluation.unverifiable();
    shape.opaque.extend(reasons);
    let mut seen = std::collections::HashSet::new();
    shape.opaque.retain(|why| seen.insert(why.clone()));
    Some(shape)
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
    let mut reader = Reader {
        source: command.as_bytes(),
        shape: CommandShape::default(),
        depth,
    };
    reader.collect(root)?;
    Some(reader.shape)
}

/// Whether the commands found are judged by allow rules or only seen by deny and ask
/// rules (what a runner might run).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Judged,
    Seen,
}

/// A `NAME=value` given to a command: the name, and the value when it is a literal.
struct Assignment {
    name: String,
    value: Option<String>,
    shown: String,
    /// Written in the source, so its binding is already recorded.
    in_source: bool,
}

impl Assignment {
    fn of_word(word: &Word) -> Option<Assignment> {
        let (name, value) = word.text.split_once('=')?;
        Some(Assignment {
            name: name.to_string(),
            value: word.literal.then(|| value.to_string()),
            shown: word.shown(),
            in_source: false,
        })
    }
}

/// Parents under which an assignment is part of something else, not a command of its own.
const ASSIGNMENT_PARENTS: &[&str] = &[
    "command",
    "declaration_command",
    "variable_assignments",
    "c_style_for_statement",
    "binary_expression",
    "unary_expression",
    "postfix_expression",
    "parenthesized_expression",
    "ternary_expression",
    "arithmetic_expansion",
    "array",
];

/// Arithmetic comparisons `[[ … ]]` evaluates.
const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

struct Reader<'s> {
    source: &'s [u8],
    shape: CommandShape,
    depth: usize,
}

impl<'s> Reader<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        node.utf8_text(self.source).unwrap_or_default()
    }

    fn collect(&mut self, node: Node<'_>) -> Option<()> {
        if node.is_error() || node.is_missing() {
            return None;
        }
        let kind = node.kind();
        match kind {
            "command" => self.command(node),
            "declaration_command" => self.declaration(node),
            "unset_command" => self.unset(node),
            "test_command" => self.test(node),
            "variable_assignment" | "variable_assignments"
                if !node
                    .parent()
                    .is_some_and(|p| ASSIGNMENT_PARENTS.contains(&p.kind())) =>
            {
                self.standalone_assignments(node)
            }
            "file_redirect" if redirect_writes(node, self.source) => {
                self.shape.writes_files = true;
            }
            "arithmetic_expansion" => {
                let text = self.text(node);
                let inner = text
                    .strip_prefix("$((")
                    .and_then(|t| t.strip_suffix("))"))
                    .or_else(|| text.strip_prefix("$[").and_then(|t| t.strip_suffix(']')))
                    .unwrap_or(text)
                    .to_string();
                self.shape.evaluation.arithmetic(&inner);
            }
            "compound_statement" if node.child(0).is_some_and(|c| self.text(c) == "((") => {
                let text = self.text(node);
                let inner = text
                    .strip_prefix("((")
                    .and_then(|t| t.strip_suffix("))"))
                    .unwrap_or(text)
                    .to_string();
                self.shape.evaluation.arithmetic(&inner);
            }
            "c_style_for_statement" => {
                let mut cursor = node.walk();
                let parts: Vec<String> = node
                    .named_children(&mut cursor)
                    .filter(|c| !matches!(c.kind(), "do_group" | "compound_statement"))
                    .map(|c| self.text(c).to_string())
                    .collect();
                for part in parts {
                    self.shape.evaluation.arithmetic(&part);
                }
            }
            "for_statement" => self.for_binding(node),
            "expansion" => self.expansion(node),
            "subscript" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                if let Some((array, index)) = children.split_first() {
                    let index: Vec<&str> = index.iter().map(|c| self.text(*c)).collect();
                    let array = self.text(*array).to_string();
                    self.shape.evaluation.subscript(&array, &index.concat());
                }
            }
            _ => {}
        }
        // An assignment (given to a command or not) sets a variable arithmetic may read.
        if kind == "variable_assignment" {
            self.bind_assignment(node);
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.collect(child)?;
        }
        Some(())
    }

    fn command(&mut self, node: Node<'_>) {
        let raw = collapse_whitespace(self.text(node));
        let mut assignments = Vec::new();
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => assignments.push(self.assignment(child)),
                kind if kind.ends_with("redirect") => {}
                _ => words.extend(words::of_node(child, self.source)),
            }
        }
        if words.is_empty() {
            // Only assignments (and redirections).
            let sets = dangerous(&assignments);
            self.check_values(&assignments, Role::Judged);
            self.shape.segments.push(Segment {
                text: raw.clone(),
                raw: Some(raw),
                spellings: Vec::new(),
                judged: true,
                sets,
            });
            return;
        }
        self.run(&words, assignments, Some(raw), Role::Judged, self.depth);
    }

    /// Add the command `words`, given `env`, and what it runs.
    fn run(
        &mut self,
        words: &[Word],
        env: Vec<Assignment>,
        raw: Option<String>,
        role: Role,
        depth: usize,
    ) {
        self.check_values(&env, role);
        for assignment in env.iter().filter(|a| !a.in_source) {
            let binding = assignment
                .value
                .clone()
                .map_or(Binding::Unknown, Binding::Literal);
            self.shape.evaluation.bind(&assignment.name, binding);
        }
        let sets = dangerous(&env);
        let shown = join(words);
        let prefix: Vec<&str> = env
            .iter()
            .filter(|a| environment::changes_what_runs(&a.name).is_some())
            .map(|a| a.shown.as_str())
            .collect();
        let text = if prefix.is_empty() {
            shown.clone()
        } else {
            format!("{} {shown}", prefix.join(" "))
        };
        let mut spellings = vec![shown.clone()];
        if let Some(first) = words.first()
            && first.literal
            && first.text.contains('/')
        {
            let mut renamed = words.to_vec();
            renamed[0] = Word::literal(program_name(&first.text));
            spellings.push(join(&renamed));
        }
        spellings.retain(|s| *s != text && Some(s) != raw.as_ref());
        let mut segment = Segment {
            text,
            raw,
            spellings,
            judged: role == Role::Judged,
            sets,
        };
        let names_set = self.builtin_names(words, role);
        segment.sets.extend(
            names_set
                .into_iter()
                .filter_map(|name| environment::changes_what_runs(&name).map(|why| (name, why))),
        );
        if depth >= MAX_DEPTH {
            self.shape.segments.push(segment);
            if role == Role::Judged {
                self.shape
                    .opaque
                    .push("wrappers nested too deeply to check".to_string());
            }
            return;
        }
        match wrappers::inner(words) {
            Inner::None => self.shape.segments.push(segment),
            Inner::Command(run) => {
                segment.judged = false;
                self.shape.segments.push(segment);
                let mut inner_env = env;
                inner_env.extend(run.env.iter().filter_map(Assignment::of_word));
                self.run(&run.words, inner_env, None, role, depth + 1);
            }
            // `find` itself runs too, so it stays judged.
            Inner::Commands(commands) => {
                self.shape.segments.push(segment);
                for command in commands {
                    let inner_env = env.iter().map(Assignment::copy).collect();
                    self.run(&command, inner_env, None, role, depth + 1);
                }
            }
            Inner::Script(script) => {
                segment.judged = false;
                self.shape.segments.push(segment);
                self.script(&script, &env, role, depth + 1);
            }
            Inner::Maybe { commands, scripts } => {
                self.shape.segments.push(segment);
                for command in commands {
                    let inner_env = env.iter().map(Assignment::copy).collect();
                    self.run(&command, inner_env, None, Role::Seen, depth + 1);
                }
                for script in scripts {
                    self.script(&script, &env, Role::Seen, depth + 1);
                }
            }
            Inner::Opaque(why) => {
                self.shape.segments.push(segment);
                if role == Role::Judged {
                    self.shape.opaque.push(why);
                }
            }
        }
    }

    /// Add the commands of a literal script run with `env`.
    fn script(&mut self, script: &str, env: &[Assignment], role: Role, depth: usize) {
        let Some(inner) = parse_at(script, depth) else {
            if role == Role::Judged {
                self.shape.opaque.push(format!(
                    "the script `{}` does not parse",
                    collapse_whitespace(script)
                ));
            }
            return;
        };
        let sets = dangerous(env);
        let prefix: Vec<&str> = env
            .iter()
            .filter(|a| environment::changes_what_runs(&a.name).is_some())
            .map(|a| a.shown.as_str())
            .collect();
        for mut segment in inner.segments {
            if role == Role::Seen {
                segment.judged = false;
            }
            if !sets.is_empty() {
                segment.spellings.push(segment.text.clone());
                segment.text = format!("{} {}", prefix.join(" "), segment.text);
                segment.sets.extend(sets.iter().cloned());
            }
            self.shape.segments.push(segment);
        }
        if role == Role::Judged {
            self.shape.opaque.extend(inner.opaque);
            self.shape.writes_files |= inner.writes_files;
        }
        self.shape.evaluation.merge(inner.evaluation);
    }

    /// A `variable_assignment` node as given to a command.
    fn assignment(&self, node: Node<'_>) -> Assignment {
        let name = self.assigned_name(node);
        let value = node
            .child_by_field_name("value")
            .map(|v| words::literal(v, self.source))
            .unwrap_or(Some(String::new()));
        Assignment {
            name,
            value,
            shown: self.text(node).to_string(),
            in_source: true,
        }
    }

    fn assigned_name(&self, node: Node<'_>) -> String {
        node.child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or_default()
            .split('[')
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Record what an assignment gives its variable, for arithmetic.
    fn bind_assignment(&mut self, node: Node<'_>) {
        let name = self.assigned_name(node);
        let binding = match node.child_by_field_name("value") {
            None => Binding::Literal(String::new()),
            Some(value) if value.kind() == "arithmetic_expansion" => Binding::Number,
            Some(value) if value.kind() == "array" => {
                let mut cursor = value.walk();
                let elements: Vec<Node<'_>> = value.named_children(&mut cursor).collect();
                for element in elements {
                    let binding = match words::literal(element, self.source) {
                        Some(text) => Binding::Literal(text),
                        None => Binding::Unknown,
                    };
                    self.shape.evaluation.bind(&name, binding);
                }
                return;
            }
            Some(value) => match words::literal(value, self.source) {
                Some(text) => Binding::Literal(text),
                None => Binding::Unknown,
            },
        };
        self.shape.evaluation.bind(&name, binding);
    }

    /// Values the shell runs or expands later (`PS4='$(…)'`) cannot be judged.
    fn check_values(&mut self, env: &[Assignment], role: Role) {
        for assignment in env {
            // Assignments given through `env`/`sudo` set variables a script may read.
            if role == Role::Judged
                && let Some(why) =
                    environment::value_runs_later(&assignment.name, assignment.value.as_deref())
            {
                self.shape.opaque.push(why);
            }
        }
    }

    fn standalone_assignments(&mut self, node: Node<'_>) {
        let raw = collapse_whitespace(self.text(node));
        let mut nodes = Vec::new();
        if node.kind() == "variable_assignment" {
            nodes.push(node);
        } else {
            let mut cursor = node.walk();
            nodes.extend(
                node.named_children(&mut cursor)
                    .filter(|c| c.kind() == "variable_assignment"),
            );
        }
        let assignments: Vec<Assignment> = nodes.iter().map(|n| self.assignment(*n)).collect();
        self.check_values(&assignments, Role::Judged);
        self.shape.segments.push(Segment {
            text: raw.clone(),
            raw: Some(raw),
            spellings: Vec::new(),
            judged: true,
            sets: dangerous(&assignments),
        });
    }
}

impl Assignment {
    fn copy(&self) -> Assignment {
        Assignment {
            name: self.name.clone(),
            value: self.value.clone(),
            shown: self.shown.clone(),
            in_source: true,
        }
    }
}

/// The variables among `assignments` that change what runs, and why.
fn dangerous(assignments: &[Assignment]) -> Vec<(String, &'static str)> {
    assignments
        .iter()
        .filter_map(|a| environment::changes_what_runs(&a.name).map(|why| (a.name.clone(), why)))
        .collect()
}

fn join(words: &[Word]) -> String {
    collapse_whitespace(&words.iter().map(Word::shown).collect::<Vec<_>>().join(" "))
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
mod tests;
