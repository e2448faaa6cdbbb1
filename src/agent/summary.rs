//! The summary request of a compaction: a model call like the run's, so it is held against
//! the budgets before it is sent, retried as the run's calls are, priced, and counted in
//! the usage ledger (under its model, and apart as `compaction`). A summary that is not
//! smaller than the conversation it replaces is refused and asked for again, shorter.

use super::retry::{Attempts, Next};
use super::state::{RunSettings, Shared, lock};
use crate::llm::assembler::Assembler;
use crate::llm::error::ProviderError;
use crate::llm::request::{ModelRequest, ThinkingLevel};
use crate::protocol::message::{Message, Usage, UserMessage};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const PROMPT: &str = include_str!("../../assets/compaction_prompt.md");

/// A summary up to this size is never refused for its size: below it, a summary longer than
/// a short conversation costs next to nothing, and asking again would cost more.
const ALWAYS_SMALL_ENOUGH: u64 = 1_024;

/// Tokens of a text, estimated as the rest of the engine does (characters / 4).
fn tokens_of(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A summary of `text` (the conversation to summarise and any instructions) smaller than
/// `replaced` tokens (or no larger than `ALWAYS_SMALL_ENOUGH`): asked for once more,
/// shorter, when the first is not; `Err` when the second is not either, or a request fails
/// or a budget does not allow it.
pub(crate) async fn summarise(
    shared: &Arc<Shared>,
    settings: &RunSettings,
    cancel: &CancellationToken,
    text: String,
    replaced: u64,
) -> Result<String, String> {
    let summary = summarise_once(shared, settings, cancel, text.clone()).await?;
    let small_enough = |tokens: u64| tokens < replaced || tokens <= ALWAYS_SMALL_ENOUGH;
    let tokens = tokens_of(&summary);
    if small_enough(tokens) {
        return Ok(summary);
    }
    tracing::info!(
        tokens,
        replaced,
        "summary not smaller than what it replaces; asking again"
    );
    let shorter = format!(
        "{text}\n\nA first summary of this conversation came to about {tokens} tokens: not \
         smaller than the {replaced} tokens it would replace. Write it again in at most {} \
         tokens: keep only what the agent needs to go on.",
        (replaced / 2).max(1)
    );
    let summary = summarise_once(shared, settings, cancel, shorter).await?;
    let again = tokens_of(&summary);
    if small_enough(again) {
        return Ok(summary);
    }
    Err(format!(
        "the summary (about {again} tokens) is not smaller than the part of the conversation it \
         would replace ({replaced} tokens), also when asked for a shorter one: nothing was \
         compacted"
    ))
}

/// One summary request, held against the budgets and counted in the ledger.
/// Boxed: it is awaited from several places, and an optimised build would otherwise copy
/// this future's code into each codegen unit that awaits it (issue 32).
fn summarise_once<'a>(
    shared: &'a Arc<Shared>,
    settings: &'a RunSettings,
    cancel: &'a CancellationToken,
    text: String,
) -> BoxFuture<'a, Result<String, String>> {
    Box::pin(summarise_once_unboxed(shared, settings, cancel, text))
}

async fn summarise_once_unboxed(
    shared: &Arc<Shared>,
    settings: &RunSettings,
    cancel: &CancellationToken,
    text: String,
) -> Result<String, String> {
    let input = tokens_of(PROMPT).saturating_add(tokens_of(&text));
    let reservation = shared
        .purse
        .reserve(&settings.model, input)
        .map_err(|reason| format!("the summary request was not sent: {reason}"))?;
    let result = request_summary(settings, text, cancel, reservation.max_output_tokens).await;
    let usage = match &result {
        Ok((_, usage)) => usage.clone(),
        Err(_) => Usage::default(),
    };
    reservation.settle(&usage);
    if let Ok((_, usage)) = &result {
        let mut state = lock(&shared.state);
        state.ledger.record_compaction(
            &settings.provider.settings().name,
            &settings.model.id,
            usage,
        );
        shared.usage_update(&state);
    }
    result.map(|(summary, _)| summary)
}

async fn request_summary(
    settings: &RunSettings,
    text: String,
    cancel: &CancellationToken,
    max_output_tokens: Option<u64>,
) -> Result<(String, Usage), String> {
    let messages = [Arc::new(Message::User(UserMessage::text(text)))];
    let mut model = settings.model.clone();
    if let Some(max) = max_output_tokens {
        model.max_output_tokens = max.min(model.max_output_tokens);
    }
    let request = ModelRequest {
        model: &model,
        system_prompt: PROMPT,
        messages: &messages,
        tools: &[],
        thinking: ThinkingLevel::Off,
        web_search: None,
        cache_key: None,
    };
    // The same retry policy as the run's model calls: a summary lost to a dropped
    // connection would leave a conversation too long to go on.
    let mut attempts = Attempts::default();
    let (assembler, mut deltas) = loop {
        let mut assembler = Assembler::new(&settings.provider.settings().name, &settings.model.id);
        let mut deltas = Vec::new();
        let result = settings
            .provider
            .stream(&request, cancel, &mut |event| {
                assembler.apply(event, &mut deltas)
            })
            .await;
        let error = match result {
            Ok(()) => break (assembler, deltas),
            Err(error) => error,
        };
        let failed = |error: &ProviderError| format!("the summary request failed: {error}");
        if cancel.is_cancelled() {
            return Err(failed(&error));
        }
        let next = if settings.auto_retry {
            attempts.after(&settings.retry, &error)
        } else {
            Next::GiveUp
        };
        let delay = match next {
            Next::Retry { delay, .. } => delay,
            Next::TooLong(requested) => {
                return Err(format!(
                    "{} (the provider asks to wait {} before trying again, more than \
                     retry.max_retry_delay_ms allows)",
                    failed(&error),
                    crate::llm::timeouts::describe(requested)
                ));
            }
            Next::GiveUp => return Err(failed(&error)),
        };
        tracing::warn!(
            attempt = attempts.retries(),
            delay_ms = crate::time::millis(delay),
            %error,
            "retrying the summary request"
        );
        tokio::select! {
            () = cancel.cancelled() => return Err(failed(&error)),
            () = tokio::time::sleep(delay) => {}
        }
    };
    let (mut message, _) = assembler.finish(&mut deltas);
    settings.model.price(&mut message.usage);
    let summary = message.text();
    if summary.trim().is_empty() {
        return Err("the model returned an empty summary".to_string());
    }
    Ok((summary, message.usage))
}
