//! What the rest of the program may know about a tool without knowing its name: which
//! argument names the file or command a call works on (permission rules match it, file
//! lists and headers show it), how a front end should summarise a call and its result.
//! Permission rules, compaction summaries, the TUI's cells and the headless modes read
//! these instead of matching on tool names.

use serde_json::Value;

/// The thing a call works on, named by one of its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// Nothing rules can match a pattern against (`tool` rules only).
    None,
    /// A file or directory path (relative to the working directory); when the argument is
    /// missing or empty the call works on the working directory itself.
    Path(&'static str),
    /// A shell command line.
    Command(&'static str),
}

impl Subject {
    /// The argument's text in `args`, if it is there.
    pub fn value<'a>(&self, args: &'a Value) -> Option<&'a str> {
        match self {
            Subject::None => None,
            Subject::Path(key) | Subject::Command(key) => args.get(*key).and_then(Value::as_str),
        }
    }
}

/// How a tool's text result reads, so a front end can shorten it sensibly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// Ordinary text: its beginning matters most.
    Text,
    /// A command's output: its end matters most, and it closes with a status line
    /// (`[exit code N]`, …).
    CommandOutput,
    /// A file's contents: best summarised by how many lines were read
    /// (`details.shownLines`).
    FileContents,
}

/// A one-line description of a call's arguments for headers (the command, the path, the
/// pattern), built from the tool's own `summarize`; an unknown tool shows its arguments.
pub fn summarize_call(name: &str, args: &Value) -> String {
    let summary = match super::builtin(name) {
        Some(tool) => tool.summarize(args),
        None => args.to_string(),
    };
    summary.lines().next().unwrap_or("").to_string()
}

/// The whole command line of a call to the built-in tool `name` when it runs one (bash).
pub fn command_of_call<'a>(name: &str, args: &'a Value) -> Option<&'a str> {
    match super::builtin(name)?.subject() {
        Subject::Command(key) => args.get(key).and_then(Value::as_str),
        _ => None,
    }
}

/// How the result of the built-in tool `name` reads (`Text` for an unknown one).
pub fn output_kind(name: &str) -> OutputKind {
    super::builtin(name).map_or(OutputKind::Text, |tool| tool.output_kind())
}

/// The file a call of the built-in tool `name` read or changed: `Some((path, changed))`
/// for tools that change the file at their path and for tools that return a file's
/// contents; `None` for the rest (searches and listings read no one file).
pub fn file_of_call<'a>(name: &str, args: &'a Value) -> Option<(&'a str, bool)> {
    let tool = super::builtin(name)?;
    let Subject::Path(_) = tool.subject() else {
        return None;
    };
    let path = tool.subject().value(args)?;
    if !tool.read_only() {
        Some((path, true))
    } else if tool.output_kind() == OutputKind::FileContents {
        Some((path, false))
    } else {
        None
    }
}

/// What kind of work a call does, as a front end groups calls (an editor's icon).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// It runs a command.
    Execute,
    /// It changes the file at its path.
    Edit,
    /// It returns a file's contents.
    Read,
    /// It searches or lists under its path.
    Search,
    /// It reaches the network.
    Fetch,
    Other,
}

/// The kind of work a call of `name` does, from the tool's own descriptions.
pub fn call_kind(name: &str) -> CallKind {
    // The only tool that reaches the network; nothing it says of itself tells that.
    if name == "web_fetch" {
        return CallKind::Fetch;
    }
    let Some(tool) = super::builtin(name) else {
        return CallKind::Other;
    };
    match (tool.subject(), tool.read_only(), tool.output_kind()) {
        (Subject::Command(_), _, _) => CallKind::Execute,
        (Subject::Path(_), false, _) => CallKind::Edit,
        (_, true, OutputKind::FileContents) => CallKind::Read,
        (Subject::Path(_), true, _) => CallKind::Search,
        _ => CallKind::Other,
    }
}

/// The path a call of the built-in tool `name` works on, as its arguments give it (not
/// empty); `None` for a tool whose subject is not a path.
pub fn path_of_call<'a>(name: &str, args: &'a Value) -> Option<&'a str> {
    let tool = super::builtin(name)?;
    let Subject::Path(_) = tool.subject() else {
        return None;
    };
    tool.subject().value(args).filter(|p| !p.is_empty())
}

/// The `details.denied` value of a call that was not allowed to run: why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    /// A deny rule in `[permissions]`.
    Rule,
    /// The agent is in read-only mode.
    ReadOnlyMode,
    /// It needed approval and nobody could give it (`-p`, json).
    NoApprover,
    /// The user said no.
    User,
}

impl Denial {
    pub fn as_str(self) -> &'static str {
        match self {
            Denial::Rule => "rule",
            Denial::ReadOnlyMode => "readOnlyMode",
            Denial::NoApprover => "noApprover",
            Denial::User => "user",
        }
    }

    /// Why a finished call was not allowed to run, from its result's details.
    pub fn of_details(details: Option<&Value>) -> Option<Denial> {
        let value = details?.get("denied")?.as_str()?;
        [
            Denial::Rule,
            Denial::ReadOnlyMode,
            Denial::NoApprover,
            Denial::User,
        ]
        .into_iter()
        .find(|d| d.as_str() == value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_come_from_the_tools() {
        assert_eq!(
            summarize_call("bash", &json!({"command": "cargo test\n--all"})),
            "cargo test"
        );
        assert_eq!(
            summarize_call("read", &json!({"path": "a.rs", "offset": 5})),
            "a.rs:5"
        );
        assert_eq!(
            summarize_call("write", &json!({"path": "a.rs", "content": "1\n2\n"})),
            "a.rs (2 lines)"
        );
        assert_eq!(
            summarize_call("edit", &json!({"path": "a.rs", "edits": [{}]})),
            "a.rs (1 edit)"
        );
        assert_eq!(
            summarize_call("grep", &json!({"pattern": "x", "path": "src"})),
            "x in src"
        );
        assert_eq!(summarize_call("ls", &json!({})), ".");
        assert_eq!(summarize_call("mystery", &json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(output_kind("bash"), OutputKind::CommandOutput);
        assert_eq!(output_kind("read"), OutputKind::FileContents);
        assert_eq!(output_kind("mystery"), OutputKind::Text);
    }

    #[test]
    fn files_of_calls_say_whether_they_change_them() {
        assert_eq!(
            file_of_call("read", &json!({"path": "a"})),
            Some(("a", false))
        );
        assert_eq!(
            file_of_call("edit", &json!({"path": "a"})),
            Some(("a", true))
        );
        assert_eq!(file_of_call("bash", &json!({"command": "ls"})), None);
        assert_eq!(file_of_call("ls", &json!({})), None);
        assert_eq!(file_of_call("grep", &json!({"path": "src"})), None);
    }
}
