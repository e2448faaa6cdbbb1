//! The parts of a command that name variables or hold text bash evaluates later:
//! declarations (`declare -n`, `-i`, `-A`), `unset`, `[[ … ]]` and `test` (`-v NAME`,
//! arithmetic comparisons), `for`/`select` variables, parameter expansions (`${x@P}`,
//! `${!x}`, offsets), and builtins that take variable names or arithmetic (`printf -v`,
//! `read`, `mapfile`, `getopts`, `let`). What they set and evaluate goes to the command's
//! `Evaluation`, judged once the whole command is read.

use super::{ARITHMETIC_TESTS, Assignment, Reader, Role, Segment, collapse_whitespace, dangerous};
use crate::tools::evaluated::Binding;
use crate::tools::words::{self, Word};
use tree_sitter::Node;

impl Reader<'_> {
    /// `declare`, `local`, `export`, `readonly`, `typeset`.
    pub(super) fn declaration(&mut self, node: Node<'_>) {
        let raw = collapse_whitespace(self.text(node));
        let keyword = node
            .child(0)
            .map(|c| self.text(c).to_string())
            .unwrap_or_default();
        let mut flags = String::new();
        let mut assignments = Vec::new();
        let mut names = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => assignments.push(self.assignment(child)),
                "variable_name" => names.push(self.text(child).to_string()),
                _ => {
                    let text = self.text(child);
                    if text.starts_with('-') || text.starts_with('+') {
                        if let Some(letters) = text.strip_prefix('-') {
                            flags.push_str(letters);
                        }
                        continue;
                    }
                    // A name given as a quoted or computed word: `declare "$x"=1`.
                    let literal = words::literal(child, self.source);
                    let name = literal
                        .as_deref()
                        .map(|t| t.split_once('=').map(|(n, _)| n).unwrap_or(t));
                    if let Err(why) = self.shape.evaluation.name_argument(&keyword, name, text) {
                        self.shape.opaque.push(why);
                    }
                    if let Some(name) = name {
                        let value = literal
                            .as_deref()
                            .and_then(|t| t.split_once('='))
                            .map(|(_, v)| v.to_string());
                        self.shape.evaluation.bind(
                            name,
                            value.clone().map_or(Binding::Unknown, Binding::Literal),
                        );
                        assignments.push(Assignment {
                            name: name.split('[').next().unwrap_or(name).to_string(),
                            value,
                            shown: text.to_string(),
                            in_source: true,
                        });
                    }
                }
            }
        }
        let declared: Vec<String> = assignments
            .iter()
            .map(|a| a.name.clone())
            .chain(names)
            .collect();
        if matches!(keyword.as_str(), "declare" | "typeset" | "local") {
            if flags.contains('n') {
                self.shape.opaque.push(format!(
                    "`{keyword} -n` makes a name refer to the variable its value names when it runs"
                ));
            }
            for name in &declared {
                if flags.contains('A') {
                    self.shape.evaluation.associative(name);
                }
                if flags.contains('i') {
                    self.shape.evaluation.integer(name);
                }
            }
        }
        self.check_values(&assignments, Role::Judged);
        self.shape.segments.push(Segment {
            text: raw.clone(),
            raw: Some(raw),
            spellings: Vec::new(),
            judged: true,
            sets: dangerous(&assignments),
        });
    }

    pub(super) fn unset(&mut self, node: Node<'_>) {
        let raw = collapse_whitespace(self.text(node));
        let mut cursor = node.walk();
        let mut functions = false;
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            let text = self.text(child).to_string();
            if text.starts_with('-') {
                functions |= text.contains('f');
                continue;
            }
            if functions {
                continue;
            }
            let literal = words::literal(child, self.source);
            if let Err(why) =
                self.shape
                    .evaluation
                    .name_argument("unset", literal.as_deref(), &text)
            {
                self.shape.opaque.push(why);
            }
        }
        self.shape.segments.push(Segment {
            text: raw.clone(),
            raw: Some(raw),
            spellings: Vec::new(),
            judged: true,
            sets: Vec::new(),
        });
    }

    /// `[[ … ]]` (arithmetic comparisons, `-v NAME`) and `[ … ]` (`-v NAME`).
    pub(super) fn test(&mut self, node: Node<'_>) {
        let raw = collapse_whitespace(self.text(node));
        let double = node.child(0).is_some_and(|c| self.text(c) == "[[");
        self.test_expressions(node, double);
        self.shape.segments.push(Segment {
            text: raw.clone(),
            raw: Some(raw),
            spellings: Vec::new(),
            judged: true,
            sets: Vec::new(),
        });
    }

    fn test_expressions(&mut self, node: Node<'_>, double: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let operator = children
            .iter()
            .find(|c| c.kind() == "test_operator")
            .map(|c| self.text(*c).to_string());
        match (node.kind(), operator.as_deref()) {
            ("binary_expression", Some(op)) if double && ARITHMETIC_TESTS.contains(&op) => {
                for operand in children.iter().filter(|c| c.kind() != "test_operator") {
                    let text = match words::literal(*operand, self.source) {
                        Some(value) => value,
                        None => self.text(*operand).to_string(),
                    };
                    self.shape.evaluation.arithmetic(&text);
                }
            }
            ("unary_expression", Some("-v")) => {
                if let Some(operand) = children.iter().find(|c| c.kind() != "test_operator") {
                    let literal = words::literal(*operand, self.source);
                    let shown = self.text(*operand).to_string();
                    if let Err(why) =
                        self.shape
                            .evaluation
                            .name_argument("test -v", literal.as_deref(), &shown)
                    {
                        self.shape.opaque.push(why);
                    }
                }
            }
            _ => {
                for child in children {
                    self.test_expressions(child, double);
                }
            }
        }
    }

    /// `for NAME in WORDS` and `select NAME in WORDS` set NAME.
    pub(super) fn for_binding(&mut self, node: Node<'_>) {
        let select = node.child(0).is_some_and(|c| self.text(c) == "select");
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let Some((variable, values)) = children.split_first() else {
            return;
        };
        let name = self.text(*variable).to_string();
        let has_in = {
            let mut cursor = node.walk();
            node.children(&mut cursor).any(|c| self.text(c) == "in")
        };
        if select || !has_in {
            self.shape.evaluation.bind(&name, Binding::Unknown);
            return;
        }
        for value in values
            .iter()
            .filter(|c| !matches!(c.kind(), "do_group" | "compound_statement"))
        {
            for word in words::of_node(*value, self.source) {
                let binding = if word.literal {
                    Binding::Literal(word.text)
                } else {
                    Binding::Unknown
                };
                self.shape.evaluation.bind(&name, binding);
            }
        }
    }

    /// `${x@P}` and `${!x}` evaluate a value as code or as a name; `${x:off:len}`
    /// evaluates its offsets as arithmetic.
    pub(super) fn expansion(&mut self, node: Node<'_>) {
        let text = self.text(node).to_string();
        if text.ends_with("@P}") {
            self.shape.opaque.push(format!(
                "`{text}` expands the value as a prompt when it runs, running the commands in it"
            ));
        }
        if text.starts_with("${!")
            && !["*}", "@}", "[@]}", "[*]}"]
                .iter()
                .any(|e| text.ends_with(e))
        {
            self.shape.opaque.push(format!(
                "`{text}` reads the variable named by a value only known when it runs (a name \
                 with a subscript runs the commands in it)"
            ));
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        if let Some(colon) = children
            .iter()
            .position(|c| self.text(*c) == ":" && !c.is_named())
        {
            let offsets: Vec<String> = children[colon + 1..]
                .iter()
                .filter(|c| c.is_named())
                .map(|c| self.text(*c).to_string())
                .collect();
            for offset in offsets {
                self.shape.evaluation.arithmetic(&offset);
            }
        }
    }

    /// Builtins that take variable names (`printf -v`, `read`, `mapfile`, `getopts`,
    /// `test -v`) or arithmetic (`let`); the names they set.
    pub(super) fn builtin_names(&mut self, words: &[Word], role: Role) -> Vec<String> {
        let Some(first) = words.first().filter(|w| w.literal) else {
            return Vec::new();
        };
        let command = first.text.as_str();
        let rest = &words[1..];
        let mut names: Vec<&Word> = Vec::new();
        let mut checked_only: Vec<&Word> = Vec::new();
        match command {
            "printf" => {
                if let Some(at) = rest.iter().position(|w| w.text == "-v") {
                    names.extend(rest.get(at + 1));
                }
            }
            "read" => {
                let mut i = 0;
                while let Some(word) = rest.get(i) {
                    let text = word.text.as_str();
                    if word.literal && text.starts_with('-') && text.len() > 1 {
                        let takes = text[1..]
                            .chars()
                            .last()
                            .is_some_and(|c| "adinNptu".contains(c));
                        if text.ends_with('a') {
                            names.extend(rest.get(i + 1));
                        }
                        i += if takes { 2 } else { 1 };
                        continue;
                    }
                    names.push(word);
                    i += 1;
                }
            }
            "mapfile" | "readarray" => {
                let mut i = 0;
                while let Some(word) = rest.get(i) {
                    let text = word.text.as_str();
                    if word.literal && text.starts_with('-') && text.len() > 1 {
                        let takes = text[1..]
                            .chars()
                            .last()
                            .is_some_and(|c| "dnOsuCc".contains(c));
                        i += if takes { 2 } else { 1 };
                        continue;
                    }
                    names.push(word);
                    break;
                }
            }
            "getopts" => {
                names.extend(rest.get(1));
                self.shape.evaluation.bind("OPTARG", Binding::Unknown);
            }
            "test" => {
                for pair in rest.windows(2) {
                    if pair[0].text == "-v" {
                        checked_only.push(&pair[1]);
                    }
                }
            }
            "let" => {
                for word in rest {
                    self.shape.evaluation.arithmetic(&word.text);
                }
            }
            _ => return Vec::new(),
        }
        let mut set = Vec::new();
        for (word, binds) in names
            .iter()
            .map(|w| (*w, true))
            .chain(checked_only.iter().map(|w| (*w, false)))
        {
            let name = word.literal.then_some(word.text.as_str());
            if let Err(why) = self
                .shape
                .evaluation
                .name_argument(command, name, &word.text)
                && role == Role::Judged
            {
                self.shape.opaque.push(why);
            }
            if binds && let Some(name) = name {
                self.shape.evaluation.bind(name, Binding::Unknown);
                set.push(name.split('[').next().unwrap_or(name).to_string());
            }
        }
        set
    }
}
