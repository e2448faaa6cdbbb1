//! The one line every front end shows for a tool call (the TUI's tool cells and sub-agent
//! rows, ACP's tool titles): the tool's own summary. The engine's own tools (`task`, `goal`,
//! `ask_user`) are known here, the built-in ones through `tools::meta`; a tool neither knows (an MCP
//! server's, which has no summary of its own) shows its arguments.

use crate::tools::Tool;
use serde_json::Value;

/// A one-line description of a call of `name` with `args` for headers and titles.
pub fn summarize_call(name: &str, args: &Value) -> String {
    let summary = match name {
        super::children::TASK_TOOL => super::children::task::summarize(args),
        super::goal::TOOL => super::goal::GoalTool.summarize(args),
        super::ask_user::TOOL => asked(args),
        _ => return crate::tools::meta::summarize_call(name, args),
    };
    summary.lines().next().unwrap_or("").to_string()
}

/// An `ask_user` call: its first question, and how many more there are.
fn asked(args: &Value) -> String {
    let questions = args["questions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(first) = questions.first().and_then(|q| q["question"].as_str()) else {
        return String::new();
    };
    match questions.len() {
        1 => first.to_string(),
        n => format!("{first} (+{} more)", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_call_reads_as_its_description() {
        let args = json!({"description": "count the files", "prompt": "count files"});
        assert_eq!(summarize_call("task", &args), "general: count the files");
    }

    #[test]
    fn a_question_reads_as_the_question_asked() {
        let one = json!({"questions": [{"question": "Which database?\nPick one", "options": []}]});
        assert_eq!(summarize_call("ask_user", &one), "Which database?");
        let two = json!({"questions": [{"question": "Which database?"}, {"question": "Port?"}]});
        assert_eq!(
            summarize_call("ask_user", &two),
            "Which database? (+1 more)"
        );
        assert_eq!(summarize_call("ask_user", &json!({})), "");
    }

    #[test]
    fn built_in_and_unknown_tools_read_as_before() {
        assert_eq!(summarize_call("bash", &json!({"command": "ls\npwd"})), "ls");
        assert_eq!(summarize_call("mcp__x__y", &json!({"q": 1})), r#"{"q":1}"#);
    }
}
