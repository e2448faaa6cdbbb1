//! Custom slash commands (prompt templates): Markdown files in `.agent/commands/`,
//! `.claude/commands/` (the project's) and `$AGENT_HOME/commands/`. The file's path gives the
//! name (`frontend/review.md` → `/frontend:review`), its front matter `description`,
//! `argument-hint` and `model`, its body the prompt, with `$ARGUMENTS` and `$1`…`$9` filled in.

use super::front_matter;
use super::sources::{Origin, SearchDir};
use std::path::{Path, PathBuf};

/// How deep subfolders of a commands folder are searched.
const MAX_DEPTH: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomCommand {
    /// Without the slash: `review`, `frontend:review`.
    pub name: String,
    pub description: Option<String>,
    pub argument_hint: Option<String>,
    /// The model this command's prompt runs with (an id of the current provider, or
    /// `provider/model`).
    pub model: Option<String>,
    /// The template.
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
}

impl CustomCommand {
    /// The prompt for this command called with `arguments` (the text after its name).
    pub fn expand(&self, arguments: &str) -> String {
        expand_template(&self.body, arguments)
    }

    /// What `/help` and completion show.
    pub fn summary(&self) -> String {
        let mut text = self
            .description
            .clone()
            .unwrap_or_else(|| first_line(&self.body));
        text.push_str(&format!(" ({})", self.origin.label()));
        text
    }
}

fn first_line(body: &str) -> String {
    let line = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    crate::tools::truncate::clip(line.trim(), 60).to_string()
}

/// Read every command under `dirs` (in precedence order: the first definition of a name
/// wins). Problems (unreadable files, bad front matter, clashes) are appended to `problems`.
pub fn discover(dirs: &[SearchDir], problems: &mut Vec<String>) -> Vec<CustomCommand> {
    let mut commands: Vec<CustomCommand> = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        collect_markdown(&dir.path, &dir.path, 0, &mut files);
        files.sort();
        for (name, path) in files {
            if let Some(winner) = commands.iter().find(|c| c.name == name) {
                problems.push(format!(
                    "/{name}: {} is ignored; {} defines it first",
                    path.display(),
                    winner.path.display()
                ));
                continue;
            }
            match read_command(&name, &path, dir.origin) {
                Ok(command) => commands.push(command),
                Err(problem) => problems.push(problem),
            }
        }
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    commands
}

/// `(name, path)` of each `.md` file under `dir`, subfolders giving `a:b` names.
fn collect_markdown(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().to_string();
        if file_name.starts_with('.') {
            continue;
        }
        // Follows symbolic links: teams link shared command folders in.
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect_markdown(root, &path, depth + 1, out);
            }
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let Ok(relative) = path
            .with_extension("")
            .strip_prefix(root)
            .map(Path::to_path_buf)
        else {
            continue;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        let name = parts.join(":");
        if is_valid_name(&name) {
            out.push((name, path));
        }
    }
}

/// Names are what can be typed after the slash: no spaces.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
}

fn read_command(name: &str, path: &Path, origin: Origin) -> Result<CustomCommand, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("/{name}: cannot read {}: {e}", path.display()))?;
    let document = front_matter::parse(&text)
        .map_err(|e| format!("{}:{}: {}", path.display(), e.line, e.message))?;
    Ok(CustomCommand {
        name: name.to_string(),
        description: document.value("description"),
        argument_hint: document.value("argument-hint"),
        model: document.value("model"),
        body: document.body.trim().to_string(),
        path: path.to_path_buf(),
        origin,
    })
}

/// Fill in `$ARGUMENTS` (all of them) and `$1`…`$9` (each word; `"quoted words"` count as
/// one). A template that uses neither gets the arguments appended after a blank line, so
/// nothing the user typed is dropped.
pub fn expand_template(template: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words = split_arguments(arguments);
    let mut out = String::with_capacity(template.len() + arguments.len());
    let mut used = false;
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = digit
                .to_digit(10)
                .and_then(|d| usize::try_from(d).ok())
                .unwrap_or(1);
            out.push_str(words.get(index - 1).map(String::as_str).unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out.push_str("\n\n");
        out.push_str(arguments);
    }
    out
}

/// Words separated by white space; double or single quotes group words.
fn split_arguments(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_in_arguments() {
        assert_eq!(
            expand_template(
                "Fix issue #$1 in $2; all: $ARGUMENTS.",
                "42 \"src/a b.rs\" now"
            ),
            "Fix issue #42 in src/a b.rs; all: 42 \"src/a b.rs\" now."
        );
        assert_eq!(
            expand_template("Missing: [$3] costs $5", "a"),
            "Missing: [] costs "
        );
        assert_eq!(expand_template("Cost: $x and $", ""), "Cost: $x and $");
        assert_eq!(
            expand_template("Review the diff.", "focus on tests"),
            "Review the diff.\n\nfocus on tests"
        );
        assert_eq!(expand_template("Review.", "  "), "Review.");
    }

    #[test]
    fn names_come_from_the_path() {
        assert!(is_valid_name("frontend:review"));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name(""));
    }
}
