//! Reading a hook's answer: its exit code, and the JSON or text it printed. A `PreToolUse`
//! answer the agent cannot read (JSON that does not parse, output cut at the size limit, a
//! `decision` that is neither `block` nor `approve`) blocks the call — a guard that cannot be
//! understood must not wave a call through — and is reported; for other events it is
//! reported and counts as nothing said. A long reason is cut to `MAX_REASON`, never dropped.

use super::HookEvent;
use serde_json::{Map, Value};

/// The longest reason passed on (to the model, the events); the rest is cut.
pub const MAX_REASON: usize = 8 * 1024;

/// One hook's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    Continue(Option<String>),
    Block(String),
    Approve(Option<String>),
}

/// What a hook printed, as read (each stream up to the size limit).
pub struct Printed<'a> {
    pub code: Option<i32>,
    pub stdout: &'a str,
    /// The hook printed more on stdout than is kept: what is here is a prefix.
    pub stdout_cut: bool,
    pub stderr: &'a str,
    pub command: &'a str,
}

/// What the agent made of a hook's answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Reading {
    /// `None`: the hook said nothing that counts.
    pub answer: Option<Answer>,
    /// What was wrong with it, for `hook_error`.
    pub problem: Option<String>,
}

impl Reading {
    fn answer(answer: Answer) -> Reading {
        Reading {
            answer: Some(answer),
            problem: None,
        }
    }
}

/// Read the answer of a hook for `event` that ran to its end.
pub fn read(event: HookEvent, printed: &Printed) -> Reading {
    match printed.code {
        Some(0) => read_stdout(event, printed),
        Some(2) => Reading::answer(Answer::Block(match printed.stderr.trim() {
            "" => format!("blocked by the hook `{}`", printed.command),
            reason => cut_reason(reason),
        })),
        code => {
            let status = code.map_or_else(
                || "was killed by a signal".to_string(),
                |c| format!("exited with code {c}"),
            );
            let stderr = printed.stderr.trim();
            Reading {
                answer: None,
                problem: Some(if stderr.is_empty() {
                    status
                } else {
                    format!("{status}: {}", crate::tools::truncate::clip(stderr, 2000))
                }),
            }
        }
    }
}

/// A reason as passed on: at most `MAX_REASON` bytes, saying when it was cut.
pub fn cut_reason(reason: &str) -> String {
    if reason.len() <= MAX_REASON {
        return reason.to_string();
    }
    format!(
        "{}… (cut: the reason has {} bytes)",
        crate::tools::truncate::clip(reason, MAX_REASON),
        reason.len()
    )
}

/// The answer of a hook that exited 0: JSON with a `decision` (and `reason`), or text
/// (context for the model where the event takes context).
fn read_stdout(event: HookEvent, printed: &Printed) -> Reading {
    let trimmed = printed.stdout.trim();
    let context = |text: &str| {
        (event.stdout_is_context() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    if !trimmed.starts_with('{') {
        return Reading::answer(Answer::Continue(context(trimmed)));
    }
    let parsed = if printed.stdout_cut {
        None
    } else {
        serde_json::from_str::<Value>(trimmed).ok()
    };
    let Some(Value::Object(answer)) = parsed else {
        return unreadable(event, printed, trimmed);
    };
    let reason = answer.get("reason").and_then(Value::as_str).map(cut_reason);
    // Claude Code's newer shape puts context in `hookSpecificOutput.additionalContext`.
    let extra = answer
        .get("hookSpecificOutput")
        .and_then(|output| output.get("additionalContext"))
        .and_then(Value::as_str)
        .and_then(context);
    match answer.get("decision").and_then(Value::as_str) {
        Some("block") => Reading::answer(Answer::Block(
            reason.unwrap_or_else(|| "blocked by a hook (it gave no reason)".to_string()),
        )),
        Some("approve") => Reading::answer(Answer::Approve(extra)),
        None | Some("") => Reading::answer(Answer::Continue(extra)),
        Some(other) => {
            let problem =
                format!("answered `\"decision\": \"{other}\"` (expected \"block\" or \"approve\")");
            refuse(event, problem, reason)
        }
    }
}

/// Stdout that starts like JSON but cannot be read as it.
fn unreadable(event: HookEvent, printed: &Printed, trimmed: &str) -> Reading {
    if event.stdout_is_context() && !printed.stdout_cut {
        // Text that happens to start with a brace.
        return Reading::answer(Answer::Continue(Some(trimmed.to_string())));
    }
    let problem = if printed.stdout_cut {
        format!(
            "its answer is longer than the {} KiB the agent reads",
            super::process::MAX_OUTPUT / 1024
        )
    } else {
        match serde_json::from_str::<Value>(trimmed) {
            Err(e) => format!("its answer is not valid JSON ({e})"),
            Ok(_) => "its answer is JSON but not an object".to_string(),
        }
    };
    // What can be made of the part that was read: a block's reason, cut, is kept.
    let salvaged = crate::llm::partial_json::parse_partial(trimmed);
    let fields = salvaged.as_ref().and_then(Value::as_object);
    let said_block = fields
        .and_then(|f| f.get("decision"))
        .and_then(Value::as_str)
        == Some("block");
    let reason = fields
        .filter(|_| said_block)
        .and_then(|f: &Map<String, Value>| f.get("reason"))
        .and_then(Value::as_str)
        .map(|reason| {
            let kept = cut_reason(reason);
            if printed.stdout_cut && kept.len() == reason.len() {
                format!("{kept}… (cut: the answer was longer than the agent reads)")
            } else {
                kept
            }
        });
    refuse(event, problem, reason)
}

/// An answer that could not be read: a `PreToolUse` hook blocks (with its reason when one
/// was read), any other counts as nothing said.
fn refuse(event: HookEvent, problem: String, reason: Option<String>) -> Reading {
    if event != HookEvent::PreToolUse {
        return Reading {
            answer: None,
            problem: Some(problem),
        };
    }
    let block = match reason {
        Some(reason) => reason,
        None => format!("the hook's answer could not be read: {problem}"),
    };
    Reading {
        answer: Some(Answer::Block(block)),
        problem: Some(format!("{problem}; the call is blocked")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(stdout: &str, cut: bool) -> Printed<'_> {
        Printed {
            code: Some(0),
            stdout,
            stdout_cut: cut,
            stderr: "",
            command: "hook.sh",
        }
    }

    #[test]
    fn unreadable_pre_tool_use_answers_block_and_others_are_only_reported() {
        let broken = printed("{\"decision\": \"approve\",", false);
        let reading = read(HookEvent::PreToolUse, &broken);
        assert!(
            matches!(&reading.answer, Some(Answer::Block(r)) if r.contains("could not be read")),
            "{reading:?}"
        );
        assert!(reading.problem.unwrap().contains("not valid JSON"));
        let reading = read(HookEvent::PostToolUse, &broken);
        assert_eq!(reading.answer, None);
        assert!(reading.problem.is_some());
        // Context events take text that merely starts with a brace.
        let reading = read(HookEvent::UserPromptSubmit, &broken);
        assert!(matches!(reading.answer, Some(Answer::Continue(Some(_)))));
        assert_eq!(reading.problem, None);
    }

    #[test]
    fn a_cut_block_keeps_the_start_of_its_reason() {
        let long = "x".repeat(3 * MAX_REASON);
        let stdout = format!("{{\"decision\": \"block\", \"reason\": \"{long}");
        let reading = read(HookEvent::PreToolUse, &printed(&stdout, true));
        let Some(Answer::Block(reason)) = reading.answer else {
            panic!("{reading:?}")
        };
        assert!(reason.starts_with(&"x".repeat(MAX_REASON)), "{reason}");
        assert!(reason.len() < MAX_REASON + 100, "{}", reason.len());
        assert!(reading.problem.unwrap().contains("longer than"));
        // Read whole, a long reason is cut the same way, and nothing is reported.
        let stdout = format!("{{\"decision\": \"block\", \"reason\": \"{long}\"}}");
        let reading = read(HookEvent::PreToolUse, &printed(&stdout, false));
        assert_eq!(reading.problem, None);
        let Some(Answer::Block(reason)) = reading.answer else {
            panic!("{reading:?}")
        };
        assert!(reason.ends_with(&format!("(cut: the reason has {} bytes)", long.len())));
    }
}
