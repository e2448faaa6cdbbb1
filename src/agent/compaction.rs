//! Keeping the context inside the model's window. The context size is the provider's
//! reported usage for the last response plus an estimate (characters / 4) of what came
//! after. Past the window minus a reserve, or when the provider reports an overflow, or on
//! request, the older part of the history is summarised by the current model with the
//! structured prompt in `assets/compaction_prompt.md` (`agent::summary`); the most recent
//! turns stay verbatim and a tool call is never separated from its result, and what keeps
//! the task — the user's request, the task list, the plan, the files, the skills, the goal
//! — is kept verbatim beside the summary (`agent::preserved`). The summary is appended to
//! the session as a compaction entry (a node of the session tree: a rewind can go back to
//! before it): nothing is deleted from the file.

use super::cut::{choose_cut, manual_cut};
use super::preserved::{self, Sources};
use super::state::{RunSettings, Shared, lock};
use crate::protocol::event::{AgentEvent, CompactionReason};
use crate::protocol::message::{AssistantContent, Content, Message, StopReason, now_millis};
use crate::session::format::NewEntry;
use crate::session::load::summary_message;
use std::fmt::Write as _;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How much of one tool result or argument goes into the text to summarise.
const MAX_PART_CHARS: usize = 2_000;

#[derive(Clone, Debug, PartialEq)]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Tokens kept free below the context window (room for the answer).
    pub reserve_tokens: u64,
    /// Tokens of the most recent history kept verbatim.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// Tokens kept verbatim: as configured, but never more than half of what fits before the
/// threshold — with a small window the kept part alone would otherwise stay over it and
/// every turn would pay for a summary that cannot help.
fn keep_recent(settings: &RunSettings) -> u64 {
    settings
        .compaction
        .keep_recent_tokens
        .min(max_kept(settings))
        .max(1)
}

/// The most a compaction may keep verbatim (half of what fits before the threshold): a
/// recent part larger than this (one huge tool result) is summarised too.
fn max_kept(settings: &RunSettings) -> u64 {
    let usable = settings
        .model
        .context_window
        .saturating_sub(settings.compaction.reserve_tokens);
    (usable / 2).max(1)
}

/// A rough token count: characters / 4.
pub fn estimate_tokens(message: &Message) -> u64 {
    let chars: usize = match message {
        Message::User(user) => content_chars(&user.content),
        Message::ToolResult(result) => content_chars(&result.content),
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Text { text } => text.len(),
                AssistantContent::Thinking { thinking, .. } => thinking.len(),
                AssistantContent::ToolCall(call) => {
                    call.name.len() + call.arguments.to_string().len()
                }
                // The provider's blocks (what the model reads again) are mostly encrypted
                // page content.
                AssistantContent::WebSearch(search) => search
                    .provider_blocks
                    .iter()
                    .map(|block| block.to_string().len())
                    .sum::<usize>()
                    .max(search.query.len()),
            })
            .sum(),
    };
    (chars as u64).div_ceil(4)
}

fn content_chars(content: &[Content]) -> usize {
    content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.len(),
            // Providers count an image as roughly a thousand tokens.
            Content::Image { .. } => 4_000,
        })
        .sum()
}

/// The size of the context a successful response reported, if `message` is one. Usage
/// reported before `since` (the first message's time: a compaction summary is dated when it
/// was made) measured a longer context and does not count.
pub fn usage_counts(message: &Message, since: i64) -> Option<u64> {
    match message {
        Message::Assistant(a)
            if a.usage.total_tokens > 0
                && a.timestamp >= since
                && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
        {
            Some(a.usage.total_tokens)
        }
        _ => None,
    }
}

/// The size of the context: the last successful response's reported usage plus an
/// estimate of every message after it — or the estimate of every message, when that is
/// larger. Stored usage can be far below what the history holds (a resumed session whose
/// usage was reported by a model with a different tokenizer, or edited by hand): trusting it
/// alone would send an oversize context whole and learn of it only from a 400.
pub fn context_tokens(messages: &[Arc<Message>]) -> u64 {
    reported_tokens(messages).max(content_tokens(messages))
}

/// The last successful response's reported usage plus an estimate of every message after it
/// (the estimate of everything when no usage was reported).
pub fn reported_tokens(messages: &[Arc<Message>]) -> u64 {
    let since = messages.first().map(|m| m.timestamp()).unwrap_or(0);
    let last_usage = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| usage_counts(m, since).map(|tokens| (i, tokens)));
    match last_usage {
        // Reported usage comes from the network: saturate rather than overflow.
        Some((index, tokens)) => tokens.saturating_add(content_tokens(&messages[index + 1..])),
        None => content_tokens(messages),
    }
}

/// The estimate of every message, from its content alone.
pub fn content_tokens(messages: &[Arc<Message>]) -> u64 {
    messages
        .iter()
        .fold(0u64, |sum, m| sum.saturating_add(estimate_tokens(m)))
}

/// The conversation as text for the summariser: tool output and arguments shortened, and
/// the oldest part dropped if it would not fit in `max_chars`.
fn transcript(messages: &[Arc<Message>], max_chars: usize) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(messages.len());
    for message in messages {
        let mut part = String::new();
        match message.as_ref() {
            Message::User(user) => {
                let _ = write!(
                    part,
                    "[User]\n{}",
                    shorten(&user.plain_text(), MAX_PART_CHARS * 4)
                );
            }
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text { text } => {
                            let _ = write!(part, "[Assistant]\n{text}\n");
                        }
                        AssistantContent::Thinking { .. } => {}
                        AssistantContent::WebSearch(search) => {
                            let _ = writeln!(part, "[Assistant] {}", search.summary());
                            for result in &search.results {
                                let _ = writeln!(part, "- {} <{}>", result.title, result.url);
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            let _ = writeln!(
                                part,
                                "[Assistant calls {}] {}",
                                call.name,
                                shorten(&call.arguments.to_string(), MAX_PART_CHARS)
                            );
                        }
                    }
                }
            }
            Message::ToolResult(result) => {
                let status = if result.is_error { " (error)" } else { "" };
                let text = crate::protocol::message::join_text(&result.content);
                let _ = write!(
                    part,
                    "[Result of {}{status}]\n{}",
                    result.tool_name,
                    shorten(&text, MAX_PART_CHARS)
                );
            }
        }
        parts.push(part);
    }
    let mut total = 0;
    let mut first = parts.len();
    while first > 0 && total + parts[first - 1].len() < max_chars {
        first -= 1;
        total += parts[first].len() + 2;
    }
    let mut text = String::with_capacity(total + 64);
    if first > 0 {
        let _ = writeln!(
            text,
            "[{first} earlier messages omitted: they did not fit]\n"
        );
    }
    text.push_str(&parts[first..].join("\n\n"));
    text
}

fn shorten(text: &str, max: usize) -> String {
    let kept = crate::tools::truncate::clip(text, max);
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!("{kept}… [{} more characters]", text.len() - kept.len())
}

/// Compact the history now. Emits `auto_compaction_start`/`_end`; on success the history
/// is the summary followed by the kept messages. Returns the token count after.
pub(crate) async fn compact(
    shared: &Arc<Shared>,
    settings: &RunSettings,
    cancel: &CancellationToken,
    reason: CompactionReason,
    instructions: Option<&str>,
) -> Result<u64, String> {
    shared
        .run_hooks(
            crate::extensions::hooks::HookEvent::PreCompact,
            None,
            serde_json::json!({
                "trigger": if reason == CompactionReason::Manual { "manual" } else { "auto" },
                "custom_instructions": instructions.unwrap_or_default(),
            }),
            cancel,
        )
        .await;
    shared.emit(AgentEvent::AutoCompactionStart { reason });
    // What the summary and the blocks kept beside it are made from is every message: the
    // part of a resumed context not read yet is read back first (`session::cold`).
    if let Err(error) = super::run::warm_context(shared) {
        let tokens = lock(&shared.state).history.context_tokens();
        shared.emit(AgentEvent::AutoCompactionEnd {
            tokens_before: tokens,
            tokens_after: tokens,
            aborted: false,
            error_message: Some(error.clone()),
        });
        return Err(error);
    }
    let (messages, ids) = {
        let state = lock(&shared.state);
        (
            state.history.messages().to_vec(),
            state.history.ids().to_vec(),
        )
    };
    let before = context_tokens(&messages);
    let result = summarise_and_replace(
        shared,
        settings,
        cancel,
        (&messages, &ids),
        reason,
        instructions,
    )
    .await;
    let (after, error) = match &result {
        Ok(after) => (*after, None),
        Err(error) => (before, Some(error.clone())),
    };
    tracing::info!(
        ?reason,
        before,
        after,
        error = error.as_deref().unwrap_or(""),
        "compaction"
    );
    shared.emit(AgentEvent::AutoCompactionEnd {
        tokens_before: before,
        tokens_after: after,
        aborted: cancel.is_cancelled(),
        error_message: error,
    });
    result
}

/// Summarise the history before the cut and replace it with the summary. After an
/// overflow the provider said it does not fit, so even a conversation that looks small is
/// summarised (see `cut::choose_cut`); a compaction the user asked for compacts whatever
/// there is (`cut::manual_cut`).
async fn summarise_and_replace(
    shared: &Arc<Shared>,
    settings: &RunSettings,
    cancel: &CancellationToken,
    (messages, ids): (&[Arc<Message>], &[String]),
    reason: CompactionReason,
    instructions: Option<&str>,
) -> Result<u64, String> {
    let (keep, max) = (keep_recent(settings), max_kept(settings));
    let cut = match reason {
        CompactionReason::Manual => manual_cut(messages, keep, max)
            .ok_or_else(|| "nothing to compact: the conversation is empty".to_string())?,
        _ => choose_cut(messages, keep, max, reason == CompactionReason::Overflow)
            .ok_or_else(|| "nothing to compact: all of the conversation is recent".to_string())?,
    };
    let budget_tokens = settings
        .model
        .context_window
        .saturating_sub(settings.compaction.reserve_tokens)
        .saturating_sub(4_000)
        .max(4_000);
    let mut request_text = format!(
        "<conversation>\n{}\n</conversation>",
        transcript(
            &messages[..cut],
            usize::try_from(budget_tokens.saturating_mul(4)).unwrap_or(usize::MAX)
        )
    );
    if let Some(instructions) = instructions.filter(|i| !i.trim().is_empty()) {
        let _ = write!(
            request_text,
            "\n\nAdditional instructions for this summary: {}",
            instructions.trim()
        );
    }
    let replaced = content_tokens(&messages[..cut]);
    let summary =
        super::summary::summarise(shared, settings, cancel, request_text, replaced).await?;
    let preserved = {
        let state = lock(&shared.state);
        preserved::blocks(&Sources {
            messages,
            cut,
            cwd: &settings.cwd,
            files: &state.files,
            extensions: &shared.extensions,
            goal: state.goal.as_deref(),
            max_chars: preserved::max_chars(settings.model.context_window),
        })
    };
    let compacted_at = now_millis();
    let summary_message = Arc::new(summary_message(&summary, &preserved, compacted_at));
    let after = estimate_tokens(&summary_message)
        + messages[cut..]
            .iter()
            .map(|m| estimate_tokens(m))
            .sum::<u64>();
    let before = context_tokens(messages);
    // The settings in use now (a model switched during the run included), so a reader
    // that starts at this compaction knows them without reading what came before.
    let current = Arc::clone(&lock(&shared.settings));
    let (name, goal) = {
        let state = lock(&shared.state);
        (state.session_name.clone(), state.goal.clone())
    };
    let (entry_id, _) = shared
        .persist_at(
            NewEntry::Compaction {
                summary: &summary,
                first_kept_entry_id: ids.get(cut).map(String::as_str),
                tokens_before: before,
                tokens_after: after,
                model: Some((&current.provider.settings().name, &current.model.id)),
                thinking: Some(current.thinking),
                name: name.as_deref(),
                goal: goal.as_deref(),
                preserved: &preserved,
            },
            compacted_at,
        )
        .await;
    shared.sync_session().await;
    lock(&shared.state)
        .history
        .replace_prefix(cut, entry_id, summary_message);
    // The entry is queued in the writer either way, so memory and file agree once writing
    // works again; until then the compaction reports why it is not saved.
    match shared.unsaved() {
        Some(error) => Err(error),
        None => Ok(after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::ThinkingLevel;
    use crate::protocol::message::{AssistantMessage, UserMessage};

    fn user(text: &str) -> Arc<Message> {
        Arc::new(Message::User(UserMessage::text(text)))
    }

    #[test]
    fn context_size_uses_reported_usage_then_estimates() {
        let mut answer = AssistantMessage::empty("p", "m");
        answer.usage.total_tokens = 1_000;
        answer.timestamp = 10;
        let mut question = UserMessage::text("q");
        question.timestamp = 5;
        let messages = vec![
            Arc::new(Message::User(question)),
            Arc::new(Message::Assistant(answer.clone())),
            user(&"y".repeat(400)),
        ];
        assert_eq!(context_tokens(&messages), 1_100);
        // After a compaction the summary is newer than the kept answer: its usage is stale.
        let mut summary = UserMessage::text("summary");
        summary.timestamp = 20;
        let messages = vec![
            Arc::new(Message::User(summary)),
            Arc::new(Message::Assistant(answer)),
        ];
        assert_eq!(context_tokens(&messages), 2);
    }

    #[test]
    fn context_size_is_never_below_the_content_estimate() {
        // A resumed session whose stored usage is far below what it holds.
        let mut answer = AssistantMessage::empty("p", "m");
        answer.usage.total_tokens = 100;
        answer.timestamp = 10;
        let mut question = UserMessage::text("z".repeat(40_000));
        question.timestamp = 5;
        let messages = vec![
            Arc::new(Message::User(question)),
            Arc::new(Message::Assistant(answer)),
            user(&"y".repeat(400)),
        ];
        assert_eq!(reported_tokens(&messages), 200);
        assert_eq!(context_tokens(&messages), 10_100);
    }

    #[test]
    fn the_transcript_keeps_the_newest_part_when_too_long() {
        let messages: Vec<_> = (0..100)
            .map(|i| user(&format!("message number {i}")))
            .collect();
        let text = transcript(&messages, 200);
        assert!(text.contains("message number 99"));
        assert!(!text.contains("message number 0\n"));
        assert!(text.starts_with("["));
    }

    #[test]
    fn a_small_window_keeps_at_most_half_of_what_fits() {
        let provider = crate::llm::client::Provider::new(
            crate::llm::provider::ProviderSettings {
                name: "p".into(),
                api: crate::llm::provider::Api::OpenaiChat,
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: None,
                api_key_env: None,
                api_key_command: None,
                headers: vec![],
                account: None,
            },
            crate::llm::timeouts::Timeouts::default(),
        )
        .unwrap();
        let mut model = crate::llm::model::ModelInfo::unknown("m");
        model.context_window = 32_000;
        let settings = RunSettings {
            provider: Arc::new(provider),
            model,
            thinking: ThinkingLevel::Off,
            system_prompt: String::new(),
            base_tools: Default::default(),
            tools: Default::default(),
            tool_specs: vec![],
            tool_source: None,
            source_generation: None,
            tool_settings: Default::default(),
            limits: Default::default(),
            retry: Default::default(),
            auto_retry: true,
            compaction: CompactionSettings::default(),
            cwd: std::path::PathBuf::from("/"),
            profile: None,
        };
        // 32,000 window - 16,384 reserve = 15,616 usable: keep half, not the configured 20k.
        assert_eq!(keep_recent(&settings), 7_808);
        let mut big = settings.clone();
        big.model.context_window = 200_000;
        assert_eq!(keep_recent(&big), 20_000);
    }
}
