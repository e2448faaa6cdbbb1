//! What a compaction keeps verbatim beside the summary, so the agent never loses its task:
//! the goal, the user's original request of the current task and their latest message,
//! the current task list, the approved plan, the files read and edited (with their state
//! now, not their content) and the active skills. Each is one text block after the
//! summary; the context files need nothing here (they are part of the system prompt, which
//! a compaction does not touch). A block is made only for what the summarised part holds:
//! what the compaction keeps is sent as it is. A later compaction carries the blocks of the
//! one before forward when nothing newer replaces them.

use super::goal;
use crate::extensions::Extensions;
use crate::protocol::message::{Content, Message, UserMessage};
use crate::protocol::todo::TodoItem;
use crate::session::load::is_summary;
use crate::tools::freshness::FileMemory;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

pub const GOAL: &str = "The goal the user set (/goal), verbatim:\n\n";
pub const REQUEST: &str = "The user's original request, verbatim:\n\n";
pub const LATEST: &str = "The user's latest message, verbatim:\n\n";
pub const TODOS: &str = "The current task list (todo_write), verbatim:\n\n";
pub const PLAN: &str = "The plan the user approved, verbatim:\n\n";
pub const FILES: &str = "Files read and edited so far, with their state now (their content is \
                         not repeated: read a file again before relying on it):\n";
pub const SKILL: &str = "Active skill ";

/// What the blocks are made from.
pub struct Sources<'a> {
    pub messages: &'a [Arc<Message>],
    /// Where the compaction cuts: `messages[..cut]` is summarised.
    pub cut: usize,
    pub cwd: &'a Path,
    pub files: &'a FileMemory,
    pub extensions: &'a Extensions,
    pub goal: Option<&'a str>,
    /// The most characters one block quotes (a request, a plan, a skill); longer ones are
    /// cut, saying how much was left out (the summary covers it).
    pub max_chars: usize,
}

/// The most characters a block quotes, for a model with this window (in tokens): a
/// sixteenth of the window, at most 16,000 — what keeps the task stays small beside what
/// the compaction frees.
pub fn max_chars(context_window: u64) -> usize {
    let chars = (context_window / 16).saturating_mul(4).min(16_000);
    usize::try_from(chars).unwrap_or(16_000).max(400)
}

/// The files listed at most; more are counted.
const MAX_FILES: usize = 200;

/// `text` cut to `max` characters (at a character boundary), saying how much was left out.
fn clip(text: &str, max: usize) -> String {
    let kept = crate::tools::truncate::clip(text, max);
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!(
        "{kept}… [{} more characters, left out here: the summary covers them]",
        text.len() - kept.len()
    )
}

/// The blocks to keep beside the summary, in order.
pub fn blocks(sources: &Sources<'_>) -> Vec<String> {
    let Sources { messages, cut, .. } = *sources;
    let cut = cut.min(messages.len());
    // The blocks of the compaction this one summarises again, if it does.
    let previous: Vec<&str> = match messages.first() {
        Some(first) if cut > 0 && is_summary(first) => text_blocks(first).skip(1).collect(),
        _ => Vec::new(),
    };
    let carried = |header: &str| {
        previous
            .iter()
            .find(|b| b.starts_with(header))
            .map(|b| b.to_string())
    };
    let max = sources.max_chars;
    let mut out = Vec::new();
    if let Some(goal) = sources.goal {
        out.push(format!("{GOAL}{goal}"));
    }
    let start = task_start(messages);
    match start {
        Some(0) if !previous.is_empty() => out.extend(carried(REQUEST)),
        Some(at) if at < cut => out.push(format!(
            "{REQUEST}{}",
            clip(&request_text(&messages[at]), max)
        )),
        _ => {}
    }
    match latest_user(messages) {
        Some(0) if !previous.is_empty() => out.extend(carried(LATEST)),
        Some(at) if at < cut && Some(at) != start => out.push(format!(
            "{LATEST}{}",
            clip(&request_text(&messages[at]), max)
        )),
        _ => {}
    }
    match last_todos(messages) {
        Some((at, todos)) if at < cut && !todos.is_empty() => {
            out.push(format!("{TODOS}{}", crate::tools::todo::render(&todos)))
        }
        Some(_) => {}
        None => out.extend(carried(TODOS)),
    }
    match approved_plan(messages) {
        Some((at, plan)) if at < cut => out.push(format!("{PLAN}{}", clip(&plan, max))),
        Some(_) => {}
        None => out.extend(carried(PLAN)),
    }
    if let Some(files) = files_block(sources, carried(FILES).as_deref()) {
        out.push(files);
    }
    out.extend(skill_blocks(sources, &previous));
    out
}

fn text_blocks(message: &Message) -> impl Iterator<Item = &str> {
    let content: &[Content] = match message {
        Message::User(user) => &user.content,
        _ => &[],
    };
    content.iter().filter_map(|c| match c {
        Content::Text { text } => Some(text.as_str()),
        Content::Image { .. } => None,
    })
}

/// What the user typed, with a note of the images it held (not repeated).
fn request_text(message: &Message) -> String {
    let Message::User(user) = message else {
        return String::new();
    };
    let images = user
        .content
        .iter()
        .filter(|c| matches!(c, Content::Image { .. }))
        .count();
    let mut text = user.typed_text().to_string();
    if images > 0 {
        let _ = write!(text, "\n[with {images} image(s), not repeated]");
    }
    text
}

fn is_users_own(message: &Message) -> bool {
    matches!(message, Message::User(_)) && !goal::is_goal_message(message)
}

/// Where the user's original request is: their first message of the conversation (after a
/// compaction, the summary, which carries it). A later message of theirs refines the task
/// or starts another; either way the first one says what the work was for, and the latest
/// is kept too.
fn task_start(messages: &[Arc<Message>]) -> Option<usize> {
    messages
        .iter()
        .enumerate()
        .position(|(i, m)| (i == 0 && is_summary(m)) || is_users_own(m))
}

/// The user's latest message of their own (index 0 may be an earlier summary).
fn latest_user(messages: &[Arc<Message>]) -> Option<usize> {
    messages.iter().rposition(|m| is_users_own(m))
}

/// The last task list the model wrote, and where.
fn last_todos(messages: &[Arc<Message>]) -> Option<(usize, Vec<TodoItem>)> {
    messages.iter().enumerate().rev().find_map(|(i, m)| {
        let assistant = m.as_assistant()?;
        assistant
            .tool_calls()
            .filter(|c| c.name == crate::tools::todo::NAME)
            .filter_map(|c| serde_json::from_value(c.arguments.get("todos")?.clone()).ok())
            .last()
            .map(|todos| (i, todos))
    })
}

/// The plan the user approved last (plan mode), and where it was written.
fn approved_plan(messages: &[Arc<Message>]) -> Option<(usize, String)> {
    let approval = messages.iter().rposition(
        |m| matches!(m.as_ref(), Message::User(u) if u.typed_text() == super::plan_mode::APPROVED),
    )?;
    messages[..approval]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| {
            let text = m.as_assistant()?.text();
            (!text.trim().is_empty()).then_some((i, text))
        })
}

/// The files the tools read and changed in the summarised part (and in what an earlier
/// compaction listed), each with its state now.
fn files_block(sources: &Sources<'_>, carried: Option<&str>) -> Option<String> {
    // path → (read, edited)
    let mut files: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for line in carried.into_iter().flat_map(|b| b.lines().skip(1)) {
        let Some(rest) = line.strip_prefix("- ") else {
            continue;
        };
        let Some((path, how)) = rest.split_once(" (") else {
            continue;
        };
        let how = how.split(')').next().unwrap_or_default();
        let entry = files.entry(path.to_string()).or_default();
        entry.0 |= how.contains("read");
        entry.1 |= how.contains("edited");
    }
    for message in &sources.messages[..sources.cut.min(sources.messages.len())] {
        let Some(assistant) = message.as_assistant() else {
            continue;
        };
        for call in assistant.tool_calls() {
            if let Some((path, edited)) =
                crate::tools::meta::file_of_call(&call.name, &call.arguments)
            {
                let entry = files.entry(path.to_string()).or_default();
                if edited {
                    entry.1 = true;
                } else {
                    entry.0 = true;
                }
            }
        }
    }
    if files.is_empty() {
        return None;
    }
    let mut block = FILES.to_string();
    let more = files.len().saturating_sub(MAX_FILES);
    for (path, (read, edited)) in files.iter().take(MAX_FILES) {
        let how = match (read, edited) {
            (true, true) => "read and edited",
            (false, true) => "edited",
            _ => "read",
        };
        let _ = writeln!(
            block,
            "- {path} ({how}): {}",
            state_now(&sources.cwd.join(path), sources.files)
        );
    }
    if more > 0 {
        let _ = writeln!(block, "({more} more files, not listed)");
    }
    Some(block.trim_end().to_string())
}

/// A file's state now, in a few words.
fn state_now(path: &Path, memory: &FileMemory) -> String {
    match std::fs::metadata(path) {
        Err(_) => "no longer exists".to_string(),
        Ok(meta) if meta.is_dir() => "a directory".to_string(),
        Ok(meta) => {
            let changed = match memory.check_unchanged(path) {
                Ok(()) => "",
                Err(_) => ", changed since the agent last read or wrote it",
            };
            format!("{} bytes{changed}", meta.len())
        }
    }
}

/// The skills in use: those the user invoked (`/skill:NAME`) or whose `SKILL.md` the model
/// read in the summarised part, each with its instructions as they are now; an earlier
/// compaction's skill blocks are carried forward.
fn skill_blocks(sources: &Sources<'_>, previous: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    };
    for message in &sources.messages[..sources.cut.min(sources.messages.len())] {
        match message.as_ref() {
            Message::User(user) => {
                if let Some(name) = invoked_skill(user) {
                    add(name);
                }
            }
            Message::Assistant(assistant) => {
                for call in assistant.tool_calls() {
                    let Some((path, false)) =
                        crate::tools::meta::file_of_call(&call.name, &call.arguments)
                    else {
                        continue;
                    };
                    let path = sources.cwd.join(path);
                    if let Some(skill) = sources.extensions.skills.iter().find(|s| s.path == path) {
                        add(&skill.name);
                    }
                }
            }
            Message::ToolResult(_) => {}
        }
    }
    let mut out: Vec<String> = previous
        .iter()
        .filter(|b| b.starts_with(SKILL))
        .filter(|b| !names.iter().any(|n| b.starts_with(&skill_header(n))))
        .map(|b| b.to_string())
        .collect();
    for name in names {
        let Some(skill) = sources.extensions.skill(&name) else {
            continue;
        };
        match skill.prompt("") {
            Ok(instructions) => out.push(format!(
                "{}{}",
                skill_header(&name),
                clip(&instructions, sources.max_chars)
            )),
            Err(error) => tracing::warn!(%error, "an active skill could not be read"),
        }
    }
    out
}

fn skill_header(name: &str) -> String {
    format!("{SKILL}`{name}`, its instructions verbatim:\n\n")
}

/// The skill a `/skill:NAME` message invoked (`Skill::prompt` starts it so).
fn invoked_skill(user: &UserMessage) -> Option<&str> {
    let rest = user.typed_text().strip_prefix("Use the skill `")?;
    rest.split_once('`').map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::{AssistantContent, AssistantMessage, ToolCall};
    use serde_json::json;

    fn user(text: &str) -> Arc<Message> {
        Arc::new(Message::User(UserMessage::text(text)))
    }

    fn answer(text: &str) -> Arc<Message> {
        let mut message = AssistantMessage::empty("p", "m");
        message
            .content
            .push(AssistantContent::Text { text: text.into() });
        Arc::new(Message::Assistant(message))
    }

    fn call(name: &str, args: serde_json::Value) -> Arc<Message> {
        let mut message = AssistantMessage::empty("p", "m");
        message.content.push(AssistantContent::ToolCall(ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
            invalid_arguments: None,
        }));
        Arc::new(Message::Assistant(message))
    }

    #[test]
    fn the_request_is_the_first_message_and_the_latest_is_the_users_own() {
        let messages = vec![
            user(&goal::start_text("g")),
            user("the task"),
            answer("done"),
            user("also this"),
            call("read", json!({"path": "a"})),
            user("steer: and b"),
            answer("ok"),
            user(&goal::continue_text("g")),
        ];
        assert_eq!(task_start(&messages), Some(1));
        assert_eq!(latest_user(&messages), Some(5));
    }

    #[test]
    fn blocks_keep_what_the_summarised_part_holds_and_carry_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "12345").unwrap();
        let memory = FileMemory::default();
        let extensions = Extensions::default();
        let todos = json!({"todos": [{"content": "step one", "status": "in_progress"}]});
        let messages = vec![
            user("fix the parser"),
            call("todo_write", todos),
            call(
                "edit",
                json!({"path": "a.rs", "oldText": "1", "newText": "2"}),
            ),
            call("read", json!({"path": "gone.rs"})),
            user("latest words"),
        ];
        let sources = Sources {
            messages: &messages,
            cut: 4,
            cwd: dir.path(),
            files: &memory,
            extensions: &extensions,
            goal: Some("ship 1.0"),
            max_chars: 1_000,
        };
        let first = blocks(&sources);
        assert_eq!(first[0], format!("{GOAL}ship 1.0"));
        assert_eq!(first[1], format!("{REQUEST}fix the parser"));
        assert!(first[2].starts_with(TODOS) && first[2].contains("[~] step one"));
        assert!(
            first[3].contains("- a.rs (edited): 5 bytes"),
            "{}",
            first[3]
        );
        assert!(first[3].contains("- gone.rs (read): no longer exists"));
        assert_eq!(first.len(), 4, "the latest message is kept as it is");
        let long = vec![user(&"x".repeat(5_000)), answer("ok")];
        let clipped = blocks(&Sources {
            messages: &long,
            cut: 2,
            goal: None,
            ..sources
        });
        assert!(clipped[0].len() < 1_200, "{}", clipped[0].len());
        assert!(clipped[0].ends_with("the summary covers them]"));
        // A second compaction of [summary, latest, answer] carries them forward.
        let summary = Arc::new(crate::session::load::summary_message("s", &first, 1));
        let messages = vec![summary, user("latest words"), answer("ok")];
        let again = blocks(&Sources {
            messages: &messages,
            cut: 3,
            goal: None,
            ..sources
        });
        assert!(again[0].starts_with(REQUEST), "{again:?}");
        assert_eq!(again[1], format!("{LATEST}latest words"));
        assert!(again[2].starts_with(TODOS));
        assert!(again[3].starts_with(FILES) && again[3].contains("a.rs (edited)"));
    }
}
