//! Every recorded provider stream in `../shared/conformance` is served by a real HTTP server
//! on 127.0.0.1, read by the real provider client, assembled, and compared with the
//! result the corpus says a correct assembler must produce.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::assembler::StreamReport;
use agent::llm::client::Provider;
use agent::llm::error::ProviderError;
use agent::llm::provider::Api;
use agent::llm::timeouts::Timeouts;
use agent::protocol::event::AssistantMessageEvent;
use agent::protocol::message::AssistantContent;
use serde_json::{Value, json};
use std::time::Duration;
use support::corpus;
use support::harness::{base_url, provider_settings};
use support::server::{FakeServer, Reply};

/// Run one recorded stream through the HTTP client and the assembler.
async fn assemble(
    api: Api,
    sse: &str,
) -> (
    agent::protocol::message::AssistantMessage,
    StreamReport,
    Option<ProviderError>,
    Vec<AssistantMessageEvent>,
) {
    let server = FakeServer::start(vec![Reply::raw(sse)]).await;
    let mut settings = provider_settings(&base_url(&server, api));
    settings.api = api;
    let provider = Provider::new(settings, Timeouts::all(Duration::from_secs(10))).unwrap();
    let mut replayed = corpus::replay(&provider).await;
    let (message, report) = replayed.assembler.finish(&mut replayed.deltas);
    (message, report, replayed.result.err(), replayed.deltas)
}

/// The corpus's view of an assembled message. Thinking signatures are Anthropic's
/// `signature_delta`s there; a Responses stream's signatures (encrypted reasoning) are
/// checked by `encrypted_reasoning_is_kept` instead.
fn observed(
    api: Api,
    message: &agent::protocol::message::AssistantMessage,
    report: &StreamReport,
    error: Option<&ProviderError>,
) -> Value {
    let mut thinking: Option<String> = None;
    let mut signatures = Vec::new();
    let mut redacted = Vec::new();
    let mut tool_calls = Vec::new();
    for block in &message.content {
        match block {
            AssistantContent::Thinking {
                thinking: text,
                signature,
                redacted: false,
            } => {
                thinking.get_or_insert_with(String::new).push_str(text);
                if let Some(signature) = signature {
                    signatures.push(signature.clone());
                }
            }
            AssistantContent::Thinking {
                signature,
                redacted: true,
                ..
            } => {
                redacted.push(signature.clone().unwrap_or_default());
            }
            AssistantContent::ToolCall(call) => {
                let mut entry =
                    json!({"id": call.id, "name": call.name, "arguments": call.arguments});
                if let Some(raw) = &call.invalid_arguments {
                    entry["arguments"] = Value::Null;
                    entry["arguments_raw"] = json!(raw);
                }
                tool_calls.push(entry);
            }
            // A provider's own search: reported by its block types (`other_block_types`).
            AssistantContent::Text { .. } | AssistantContent::WebSearch(_) => {}
        }
    }
    let error_text = error.map(|e| match e {
        ProviderError::Stream(error) => error.message.clone(),
        other => panic!("the stream failed outside the provider's own error: {other}"),
    });
    let stop_reason = if error_text.is_some() {
        json!("error")
    } else {
        report
            .finish
            .as_ref()
            .map(|f| json!(f.as_str()))
            .unwrap_or(Value::Null)
    };
    let mut extra = serde_json::Map::new();
    if let Some(refusal) = &report.refusal {
        extra.insert("refusal".into(), json!(refusal));
    }
    if !signatures.is_empty() && api == Api::Anthropic {
        extra.insert("thinking_signatures".into(), json!(signatures));
    }
    if !redacted.is_empty() {
        extra.insert("redacted_thinking".into(), json!(redacted));
    }
    if !report.other_blocks.is_empty() {
        extra.insert("other_block_types".into(), json!(report.other_blocks));
    }
    json!({
        "text": message.text(),
        "thinking": thinking,
        "tool_calls": tool_calls,
        "stop_reason": stop_reason,
        "usage": report.usage.as_ref().map(|u| json!({"input_tokens": u.input, "output_tokens": u.output})),
        "error": error_text,
        "extra": extra,
    })
}

/// Ids the recorder left out cannot be compared; the agent makes its own.
fn normalise(mut expected: Value, observed: &Value) -> Value {
    if let (Some(calls), Some(seen)) = (
        expected["tool_calls"].as_array_mut(),
        observed["tool_calls"].as_array(),
    ) {
        for (call, seen) in calls.iter_mut().zip(seen) {
            if call["id"].is_null() {
                call["id"] = seen["id"].clone();
            }
        }
    }
    if expected.get("extra").is_none() {
        expected["extra"] = json!({});
    }
    expected
}

#[tokio::test]
async fn every_supported_stream_assembles_to_its_expected_result() {
    let Some(dir) = corpus::dir() else {
        crate::support::skip::skip(
            "no conformance corpus (../shared/conformance beside the repository, or \
             AGENT_CONFORMANCE_DIR)",
        );
        return;
    };
    let streams = corpus::streams(&dir);
    let mut checked = 0;
    let mut failures = Vec::new();
    for stream in &streams {
        let (api, file, sse) = (stream.api, &stream.file, &stream.sse);
        let expected = stream.expected.clone();
        let (message, report, error, deltas) = assemble(api, sse).await;
        let seen = observed(api, &message, &report, error.as_ref());
        let expected = normalise(expected, &seen);
        if seen != expected {
            failures.push(format!("{file}:\n  expected {expected}\n  observed {seen}"));
        }
        if let Err(why) = stop_reason_matches(&expected, &message, error.as_ref()) {
            failures.push(format!("{file}: {why}"));
        }
        if let Err(why) = deltas_rebuild_the_message(&deltas, &message) {
            failures.push(format!("{file}: {why}"));
        }
        if api == Api::OpenaiResponses
            && let Err(why) = encrypted_reasoning_is_kept(sse, &message)
        {
            failures.push(format!("{file}: {why}"));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} streams differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked, streams.len(), "every stream has a decoder");
    assert!(checked >= 40, "checked {checked}");
}

/// The message's own stop reason (the agent's policy over the provider's) agrees with the
/// corpus: a refusal is a normal stop, a call cut off by the limit is `length`.
fn stop_reason_matches(
    expected: &Value,
    message: &agent::protocol::message::AssistantMessage,
    error: Option<&ProviderError>,
) -> Result<(), String> {
    use agent::protocol::message::StopReason;
    if error.is_some() {
        return Ok(());
    }
    let wanted = match expected["stop_reason"].as_str() {
        Some("stop") => StopReason::Stop,
        Some("tool_use") => StopReason::ToolUse,
        Some("length") => StopReason::Length,
        _ => return Ok(()),
    };
    if message.stop_reason == wanted {
        Ok(())
    } else {
        Err(format!(
            "the message stops with {:?}, the corpus says {wanted:?}",
            message.stop_reason
        ))
    }
}

/// What a `--mode json` client sees: concatenating each block's deltas must give the final
/// text, thinking and tool-call arguments.
fn deltas_rebuild_the_message(
    deltas: &[AssistantMessageEvent],
    message: &agent::protocol::message::AssistantMessage,
) -> Result<(), String> {
    let mut rebuilt: Vec<String> = vec![String::new(); message.content.len()];
    for delta in deltas {
        match delta {
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            }
            | AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            }
            | AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } => rebuilt
                .get_mut(*content_index)
                .ok_or_else(|| format!("a delta for block {content_index}, which is not there"))?
                .push_str(delta),
            _ => {}
        }
    }
    for (index, (block, text)) in message.content.iter().zip(&rebuilt).enumerate() {
        let consistent = match block {
            AssistantContent::Text { text: final_text } => final_text == text,
            AssistantContent::Thinking { thinking, .. } => thinking == text,
            AssistantContent::ToolCall(call) => match &call.invalid_arguments {
                Some(raw) => raw == text,
                None if text.trim().is_empty() => call.arguments == json!({}),
                None => serde_json::from_str::<Value>(text).ok().as_ref() == Some(&call.arguments),
            },
            // A search has no deltas.
            AssistantContent::WebSearch(_) => text.is_empty(),
        };
        if !consistent {
            return Err(format!(
                "the deltas of block {index} give {text:?}, the message has {block:?}"
            ));
        }
    }
    Ok(())
}

/// The `encrypted_content` of every reasoning item in a Responses stream ends up, in order,
/// as the signature of a thinking block (it is what lets the reasoning be replayed).
fn encrypted_reasoning_is_kept(
    sse: &str,
    message: &agent::protocol::message::AssistantMessage,
) -> Result<(), String> {
    let sent: Vec<String> = sse
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter(|event| event["type"] == "response.output_item.done")
        .filter_map(|event| {
            event["item"]["encrypted_content"]
                .as_str()
                .map(String::from)
        })
        .collect();
    let kept: Vec<String> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking {
                signature: Some(signature),
                ..
            } => Some(
                agent::llm::openai_responses::signature::decode(signature)
                    .1
                    .into_owned(),
            ),
            _ => None,
        })
        .collect();
    if sent == kept {
        Ok(())
    } else {
        Err(format!("encrypted reasoning {sent:?} was kept as {kept:?}"))
    }
}
