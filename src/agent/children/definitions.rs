//! Agent definitions: what a `task` call can start. Each is a Markdown file with front
//! matter (`name`, `description`, `tools`, `model`) whose body is the child's system prompt,
//! found in `.agent/agents/` of the project and `$AGENT_HOME/agents/`; `general` is built
//! in. A project's definition wins over a user's of the same name, and either over the
//! built-in one.

use std::path::{Path, PathBuf};

/// The agent a `task` call runs when it names none.
pub const GENERAL: &str = "general";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The tools the child may use (`None`: all the parent's, `task` aside).
    pub tools: Option<Vec<String>>,
    /// Another model: `provider/model`, or a model of the parent's provider.
    pub model: Option<String>,
    /// The child's system prompt.
    pub prompt: String,
    /// The file it came from (`None` for the built-in one).
    pub source: Option<PathBuf>,
}

impl AgentDefinition {
    /// The built-in general-purpose agent.
    pub fn general() -> AgentDefinition {
        AgentDefinition {
            name: GENERAL.to_string(),
            description: "A general-purpose agent with the same tools as you: research a \
                          question, search the code, or carry out a self-contained change."
                .to_string(),
            tools: None,
            model: None,
            prompt: "You are a sub-agent of a coding agent: another agent gave you a task. \
                     Work on it with your tools until it is done, then answer with a concise \
                     final message: it is all the other agent sees of your work, so state what \
                     you found or changed (files, key facts), and anything left undone."
                .to_string(),
            source: None,
        }
    }
}

/// The definitions of `dirs` (earlier directories win over later ones), then `general` if
/// no file replaced it; and what could not be read, one line each, for the user.
pub fn load(dirs: &[PathBuf]) -> (Vec<AgentDefinition>, Vec<String>) {
    let mut found: Vec<AgentDefinition> = Vec::new();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        paths.sort();
        for path in paths {
            match read(&path) {
                Ok(definition) if found.iter().any(|d| d.name == definition.name) => {}
                Ok(definition) => found.push(definition),
                Err(error) => warnings.push(format!("{}: {error}", path.display())),
            }
        }
    }
    if !found.iter().any(|d| d.name == GENERAL) {
        found.insert(0, AgentDefinition::general());
    }
    (found, warnings)
}

fn read(path: &Path) -> Result<AgentDefinition, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    parse(&text, &stem).map(|mut definition| {
        definition.source = Some(path.to_path_buf());
        definition
    })
}

/// A definition from a file's text; `default_name` (the file name) when it names none.
///
/// The front matter is read by hand: it is four flat keys (a string or a list of names
/// each), and a YAML library would add a large dependency for that. Accepted: `key: value`
/// (quotes optional), lists as `[a, b]`, `a, b` or `- a` lines below the key.
pub fn parse(text: &str, default_name: &str) -> Result<AgentDefinition, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    let (front, body) = if lines.next().map(str::trim_end) == Some("---") {
        let mut front = Vec::new();
        let mut closed = false;
        for line in lines.by_ref() {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            front.push(line);
        }
        if !closed {
            return Err("the front matter has no closing `---` line".to_string());
        }
        (front, lines.collect::<Vec<_>>().join("\n"))
    } else {
        (Vec::new(), text.to_string())
    };
    let mut definition = AgentDefinition {
        name: default_name.to_string(),
        description: String::new(),
        tools: None,
        model: None,
        prompt: body.trim().to_string(),
        source: None,
    };
    let mut list_key: Option<String> = None;
    for (index, line) in front.iter().enumerate() {
        let number = index + 2;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            match list_key.as_deref() {
                Some("tools") => definition
                    .tools
                    .get_or_insert_with(Vec::new)
                    .push(unquote(item).to_string()),
                _ => return Err(format!("line {number}: a list item outside `tools`")),
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(format!("line {number}: expected `key: value`"));
        };
        let (key, value) = (key.trim(), value.trim());
        list_key = None;
        match key {
            "name" => definition.name = unquote(value).to_string(),
            "description" => definition.description = unquote(value).to_string(),
            "model" if !value.is_empty() => definition.model = Some(unquote(value).to_string()),
            "model" => {}
            "tools" if value.is_empty() => {
                list_key = Some("tools".to_string());
                definition.tools = Some(Vec::new());
            }
            "tools" => definition.tools = Some(names(value)),
            other => {
                return Err(format!(
                    "line {number}: unknown key `{other}` (known: name, description, tools, model)"
                ));
            }
        }
    }
    let name = definition.name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "the name `{name}` is not valid (letters, digits, `-` and `_` only)"
        ));
    }
    if definition.prompt.is_empty() {
        return Err("the body (the agent's system prompt) is empty".to_string());
    }
    Ok(definition)
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// `[a, b]` or `a, b` (or `a b`) as names.
fn names(value: &str) -> Vec<String> {
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    inner
        .split([',', ' '])
        .map(unquote)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_front_matter_and_body() {
        let text = "---\nname: explore\ndescription: \"Finds code\"\ntools: [read, grep, find]\nmodel: local/small\n---\n\nYou explore.\n";
        let d = parse(text, "file").unwrap();
        assert_eq!(d.name, "explore");
        assert_eq!(d.description, "Finds code");
        assert_eq!(
            d.tools,
            Some(vec!["read".into(), "grep".into(), "find".into()])
        );
        assert_eq!(d.model.as_deref(), Some("local/small"));
        assert_eq!(d.prompt, "You explore.");
    }

    #[test]
    fn lists_as_lines_and_defaults() {
        let d = parse("---\ntools:\n  - read\n  - ls\n---\nBody", "reviewer").unwrap();
        assert_eq!(d.name, "reviewer");
        assert_eq!(d.tools, Some(vec!["read".into(), "ls".into()]));
        let plain = parse("Just a prompt", "plain").unwrap();
        assert_eq!(plain.tools, None);
        assert_eq!(plain.prompt, "Just a prompt");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(
            parse("---\nname: x\nBody", "f")
                .unwrap_err()
                .contains("closing")
        );
        assert!(
            parse("---\ncolour: red\n---\nBody", "f")
                .unwrap_err()
                .contains("unknown key `colour`")
        );
        assert!(
            parse("---\nname: a b\n---\nBody", "f")
                .unwrap_err()
                .contains("not valid")
        );
        assert!(
            parse("---\nname: a\n---\n", "f")
                .unwrap_err()
                .contains("empty")
        );
    }

    #[test]
    fn project_definitions_win_and_general_is_built_in() {
        let project = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        std::fs::write(
            project.path().join("a.md"),
            "---\nname: review\n---\nProject",
        )
        .unwrap();
        std::fs::write(user.path().join("b.md"), "---\nname: review\n---\nUser").unwrap();
        std::fs::write(user.path().join("bad.md"), "---\nname: x\n").unwrap();
        let (found, warnings) = load(&[project.path().into(), user.path().into()]);
        let names: Vec<_> = found.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["general", "review"]);
        assert_eq!(found[1].prompt, "Project");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("bad.md"), "{warnings:?}");
    }
}
