//! The model's handles on background shells: `bash_output {id, filter?}` (new output since
//! the last look, and the exit status once the command ended) and `kill_shell {id}`.
//! Starting one is `bash {command, background: true}` (`tools::bash`).

use super::{BackgroundShells, NewOutput, ShellStatus};
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, tail};
use crate::tools::{Tool, ToolContext, ToolOutput, parse_args};
use futures_util::future::BoxFuture;
use grep_matcher::Matcher;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct BashOutputTool;
pub struct KillShellTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    id: String,
    #[serde(default)]
    filter: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    id: String,
}

fn unknown(id: &str, shells: &BackgroundShells) -> ToolOutput {
    if shells.forgotten(id) {
        return ToolOutput::error(format!(
            "Background shell `{id}` ended and was cleaned up: only the last {} ended shells \
             are kept.",
            super::ENDED_KEPT
        ));
    }
    let ids = shells.ids();
    ToolOutput::error(if ids.is_empty() {
        format!("No background shell `{id}`: none was started.")
    } else {
        format!(
            "No background shell `{id}`. The shells are: {}.",
            ids.join(", ")
        )
    })
}

/// The text of new output as the model reads it: filtered, the tail if too long, then the
/// status line.
pub fn render(id: &str, new: &NewOutput, filter: Option<&grep_regex::RegexMatcher>) -> String {
    let mut text = String::new();
    if new.dropped > 0 {
        text.push_str(&format!(
            "[{} bytes of earlier output were dropped before they were read]\n",
            new.dropped
        ));
    }
    let body = match filter {
        Some(matcher) => new
            .text
            .lines()
            .filter(|line| matcher.is_match(line.as_bytes()).unwrap_or(false))
            .map(|line| format!("{line}\n"))
            .collect::<String>(),
        None => new.text.clone(),
    };
    let shown = tail(&body, MAX_LINES, MAX_BYTES);
    if shown.truncated {
        text.push_str(&format!(
            "[only the last {} of {} new lines]\n",
            shown.kept_lines, shown.total_lines
        ));
    }
    if shown.text.is_empty() {
        text.push_str("(no new output)\n");
    } else {
        text.push_str(&shown.text);
        if !shown.text.ends_with('\n') {
            text.push('\n');
        }
    }
    text.push_str(&format!("[{id}: {}]", new.status.describe()));
    if let Some(blocked) = &new.blocked {
        text.push_str(&format!(
            "\nBlocked by the sandbox: {}. {}",
            blocked.boundary, blocked.remedy
        ));
    }
    text
}

fn status_details(id: &str, status: ShellStatus) -> Value {
    let (state, exit_code) = match status {
        ShellStatus::Running => ("running", None),
        ShellStatus::Exited(crate::tools::process::Exit::Code(code)) => ("exited", Some(code)),
        ShellStatus::Exited(_) => ("exited", None),
        ShellStatus::Killed => ("killed", None),
    };
    json!({"shellId": id, "status": state, "exitCode": exit_code})
}

impl Tool for BashOutputTool {
    fn name(&self) -> &'static str {
        "bash_output"
    }

    fn description(&self) -> &'static str {
        "Read the output a background shell (started with bash background: true) printed since \
         the last look, and its exit status once it has ended. filter (a regular expression) \
         keeps only the matching lines."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The shell's id, e.g. shell_1"},
                "filter": {"type": "string", "description": "Only lines matching this regular expression"}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: OutputArgs = match parse_args("bash_output", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let filter = match args.filter.as_deref().filter(|f| !f.is_empty()) {
                Some(pattern) => match grep_regex::RegexMatcher::new(pattern) {
                    Ok(matcher) => Some(matcher),
                    Err(e) => {
                        return ToolOutput::error(format!("Invalid filter `{pattern}`: {e}"));
                    }
                },
                None => None,
            };
            let Some(new) = ctx.shells.take_new_output(&args.id) else {
                return unknown(&args.id, &ctx.shells);
            };
            let mut details = status_details(&args.id, new.status);
            if let (Some(details), Some(blocked)) = (details.as_object_mut(), &new.blocked) {
                details.insert(
                    "sandbox".to_string(),
                    json!({"blocked": blocked.boundary, "remedy": blocked.remedy}),
                );
            }
            ToolOutput::text(render(&args.id, &new, filter.as_ref())).with_details(details)
        })
    }
}

impl Tool for KillShellTool {
    fn name(&self) -> &'static str {
        "kill_shell"
    }

    fn description(&self) -> &'static str {
        "Stop a background shell (started with bash background: true) and everything it \
         started."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The shell's id, e.g. shell_1"}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    /// It can only stop what this agent started in the background (the user approved
    /// starting it), and changes no file: it runs in every mode without asking.
    fn read_only(&self) -> bool {
        true
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: KillArgs = match parse_args("kill_shell", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let Some(status) = ctx.shells.kill(&args.id).await else {
                return unknown(&args.id, &ctx.shells);
            };
            let text = match status {
                ShellStatus::Killed => format!("{} was killed.", args.id),
                other => format!(
                    "{} had already ended ({}); what it left running was killed.",
                    args.id,
                    other.describe()
                ),
            };
            ToolOutput::text(text).with_details(status_details(&args.id, status))
        })
    }
}
