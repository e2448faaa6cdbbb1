//! Provider failures injected on the wire, through the Agent and its retry loop, for the
//! Anthropic and Responses APIs: rate limits with `Retry-After`, server errors, dropped and
//! stalled connections, streams cut short, in-stream errors, bad keys, an abort while
//! waiting to retry, and an answer cut by the output limit (which is not a failure). Each
//! ends in the right retry or one clear failure, never a hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::client::Provider;
use agent::llm::provider::{Api, ProviderSettings};
use agent::llm::timeouts::Timeouts;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::{Message, StopReason};
use std::sync::Arc;
use std::time::Duration;
use support::harness::{Harness, end_of, provider};
use support::server::{End, Reply};
use support::{anthropic, responses};

/// `(delayMs, errorMessage)` of every `auto_retry_start`.
fn retries(events: &[AgentEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AutoRetryStart {
                delay_ms,
                error_message,
                ..
            } => Some((*delay_ms, error_message.clone())),
            _ => None,
        })
        .collect()
}

/// The assistant messages that ended, failed attempts included.
fn ended_assistants(events: &[AgentEvent]) -> Vec<agent::protocol::message::AssistantMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => message.as_assistant().cloned(),
            _ => None,
        })
        .collect()
}

fn final_text(h: &Harness) -> String {
    let messages = h.agent.messages();
    assert_eq!(messages.len(), 2, "failed attempts stay out of the history");
    messages[1].as_assistant().unwrap().text()
}

/// Honour retry delays the server asks for up to a minute (the harness caps them lower).
fn patient(config: &mut agent::agent::AgentConfig) {
    config.retry.max_retry_delay = Duration::from_secs(60);
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::status(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            )
            .with_header("retry-after", "1"),
            Reply::sse(anthropic::text("after the wait")),
        ],
        patient,
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, 1000, "the delay is the server's Retry-After");
    assert!(
        retries[0]
            .1
            .starts_with("HTTP 429 Too Many Requests: Number of request tokens"),
        "{}",
        retries[0].1
    );
    assert_eq!(final_text(&h), "after the wait");
}

#[tokio::test]
async fn a_server_error_is_retried_and_then_succeeds() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::status(
                500,
                r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            ),
            Reply::status(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            Reply::sse(anthropic::text("third time lucky")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let messages: Vec<_> = retries(&events).into_iter().map(|r| r.1).collect();
    assert_eq!(
        messages,
        vec![
            "HTTP 500 Internal Server Error: Internal server error",
            "HTTP 529: Overloaded"
        ]
    );
    let end = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::AutoRetryEnd {
                success, attempt, ..
            } => Some((*success, *attempt)),
            _ => None,
        })
        .unwrap();
    assert_eq!(end, (true, 2));
    assert_eq!(final_text(&h), "third time lucky");
    assert_eq!(h.server.requests().len(), 3);
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_retried_without_duplicating_text() {
    let mut h = Harness::start_api(
        Api::OpenaiResponses,
        vec![
            Reply::sse(responses::Stream::new().text("half an").unfinished()).then(End::Drop),
            Reply::sse(responses::text("whole answer")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0]
            .1
            .starts_with("the connection to the provider failed"),
        "{}",
        retries[0].1
    );
    let ended = ended_assistants(&events);
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0].stop_reason, StopReason::Error);
    assert_eq!(
        ended[0].text(),
        "half an",
        "what streamed before the drop is kept"
    );
    assert_eq!(final_text(&h), "whole answer");
    let second = &h.server.bodies()[1];
    assert_eq!(second["input"].as_array().unwrap().len(), 1, "{second}");
}

#[tokio::test]
async fn a_stream_that_ends_before_its_terminal_event_is_truncated_and_retried() {
    for api in [Api::Anthropic, Api::OpenaiResponses] {
        let cut_short = match api {
            Api::Anthropic => anthropic::Stream::new().text("cut").unfinished(),
            _ => responses::Stream::new().text("cut").unfinished(),
        };
        let whole = match api {
            Api::Anthropic => anthropic::text("complete"),
            _ => responses::text("complete"),
        };
        let mut h =
            Harness::start_api(api, vec![Reply::sse(cut_short), Reply::sse(whole)], |_| {}).await;
        h.prompt("hi");
        let events = h.until_end().await;
        assert_eq!(end_of(&events).0, "completed", "{api:?}");
        assert_eq!(
            retries(&events)[0].1,
            "the response stream ended before the response was complete"
        );
        assert_eq!(final_text(&h), "complete");
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_is_retried() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::sse(anthropic::Stream::new().text("then silence").unfinished()).then(End::Stall),
            Reply::sse(anthropic::text("awake again")),
        ],
        |config| {
            let base = config.provider.settings().base_url.clone();
            config.provider = provider(Api::Anthropic, &base, Duration::from_secs(1));
        },
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        retries(&events)[0].1,
        "the provider sent nothing for 1 s (stream_idle_timeout_secs)"
    );
    assert_eq!(final_text(&h), "awake again");
}

#[tokio::test]
async fn anthropic_overloaded_mid_stream_is_retried() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::sse(
                anthropic::Stream::new()
                    .text("Partial ")
                    .fail("overloaded_error", "Overloaded"),
            ),
            Reply::sse(anthropic::text("fine now")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        retries(&events)
            .into_iter()
            .map(|r| r.1)
            .collect::<Vec<_>>(),
        vec!["Overloaded (overloaded_error)"]
    );
    let ended = ended_assistants(&events);
    assert_eq!(ended[0].stop_reason, StopReason::Error);
    assert_eq!(
        ended[0].error_message.as_deref(),
        Some("Overloaded (overloaded_error)")
    );
    assert_eq!(final_text(&h), "fine now");
    let retry_body = &h.server.bodies()[1];
    assert_eq!(
        retry_body["messages"].as_array().unwrap().len(),
        1,
        "the failed attempt is not sent back: {retry_body}"
    );
}

#[tokio::test]
async fn responses_errors_are_retried_only_when_transient() {
    let mut h = Harness::start_api(
        Api::OpenaiResponses,
        vec![
            Reply::sse(responses::Stream::new().fail(
                "server_error",
                "The server had an error processing your request. Sorry about that!",
            )),
            Reply::sse(responses::text("recovered")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(retries(&events).len(), 1);
    assert_eq!(final_text(&h), "recovered");

    let quota = "You exceeded your current quota, please check your plan and billing details.";
    let mut h = Harness::start_api(
        Api::OpenaiResponses,
        vec![Reply::sse(
            responses::Stream::new().fail("insufficient_quota", quota),
        )],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(
        end_of(&events),
        ("failed".to_string(), Some(quota.to_string()))
    );
    assert!(retries(&events).is_empty());
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn a_401_names_the_variable_that_holds_the_key() {
    for api in [Api::Anthropic, Api::OpenaiResponses] {
        let body = match api {
            Api::Anthropic => {
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            }
            _ => {
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#
            }
        };
        let mut h = Harness::start_api(api, vec![Reply::status(401, body)], |config| {
            let settings = ProviderSettings {
                api_key: None,
                api_key_env: Some("AGENT_TEST_KEY_THAT_IS_NOT_SET".into()),
                ..config.provider.settings().clone()
            };
            config.provider =
                Arc::new(Provider::new(settings, Timeouts::all(Duration::from_secs(5))).unwrap());
        })
        .await;
        h.prompt("hi");
        let (status, error) = end_of(&h.until_end().await);
        assert_eq!(status, "failed");
        let error = error.unwrap();
        assert!(error.starts_with("HTTP 401 Unauthorized: "), "{error}");
        assert!(
            error.ends_with("(check AGENT_TEST_KEY_THAT_IS_NOT_SET)"),
            "{error}"
        );
        assert_eq!(h.server.requests().len(), 1, "a 401 is not retried");
    }
}

#[tokio::test]
async fn abort_while_waiting_to_retry_ends_the_run() {
    let mut h = Harness::start_api(
        Api::OpenaiResponses,
        vec![
            Reply::status(503, r#"{"error":{"message":"Service unavailable"}}"#)
                .with_header("retry-after", "30"),
        ],
        patient,
    )
    .await;
    h.prompt("hi");
    let waiting = h
        .until(|e| matches!(e, AgentEvent::AutoRetryStart { .. }))
        .await;
    assert_eq!(retries(&waiting)[0].0, 30_000);
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    let retry_end = events.iter().find_map(|e| match e {
        AgentEvent::AutoRetryEnd {
            success,
            final_error,
            ..
        } => Some((*success, final_error.clone().unwrap_or_default())),
        _ => None,
    });
    let (success, final_error) = retry_end.unwrap();
    assert!(!success);
    assert!(
        final_error.contains("aborted while waiting to retry"),
        "{final_error}"
    );
    assert_eq!(h.server.requests().len(), 1, "no request after the abort");
    let last = h.agent.messages().last().cloned().unwrap();
    let Message::Assistant(last) = last.as_ref() else {
        panic!("expected the aborted assistant message last");
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn an_answer_cut_by_the_output_limit_stops_for_length_without_a_retry() {
    for api in [Api::Anthropic, Api::OpenaiResponses] {
        let frames = match api {
            Api::Anthropic => anthropic::Stream::new()
                .text("a long answer that")
                .finish("max_tokens"),
            _ => responses::Stream::new()
                .text("a long answer that")
                .incomplete(),
        };
        let mut h = Harness::start_api(api, vec![Reply::sse(frames)], |_| {}).await;
        h.prompt("hi");
        let events = h.until_end().await;
        assert_eq!(end_of(&events).0, "completed", "{api:?}");
        assert!(retries(&events).is_empty());
        let answer = h.agent.messages()[1].as_assistant().cloned().unwrap();
        assert_eq!(answer.stop_reason, StopReason::Length, "{api:?}");
        assert_eq!(answer.text(), "a long answer that");
    }
}

/// Behind LiteLLM, an upstream failure inside the stream carries the wire API's own code
/// and LiteLLM's own words: the code decides. A server error (Chat `code: "500"`, Responses
/// `server_error`, Anthropic `api_error`) is retried once, then the run fails.
#[tokio::test]
async fn an_in_stream_server_error_behind_litellm_is_judged_by_its_code_and_retried_once() {
    use support::litellm::{CONNECTION_ERROR, anthropic_failing, chat_failing, responses_failing};
    type Failing = fn(&str) -> Vec<String>;
    let cases: [(Api, Failing, Vec<String>); 3] = [
        (
            Api::OpenaiChat,
            |partial| chat_failing(partial, "500", CONNECTION_ERROR),
            support::chat::text("recovered"),
        ),
        (
            Api::OpenaiResponses,
            |partial| responses_failing(partial, "server_error", CONNECTION_ERROR),
            responses::text("recovered"),
        ),
        (
            Api::Anthropic,
            |partial| anthropic_failing(partial, "api_error", CONNECTION_ERROR),
            anthropic::text("recovered"),
        ),
    ];
    for (api, failing, fine) in cases {
        let mut h = Harness::start_api(
            api,
            vec![Reply::sse(failing("Partial ")), Reply::sse(fine)],
            |_| {},
        )
        .await;
        h.prompt("hi");
        let events = h.until_end().await;
        assert_eq!(end_of(&events).0, "completed", "{api:?}: {events:?}");
        let retried = retries(&events);
        assert_eq!(retried.len(), 1, "{api:?}");
        assert!(
            retried[0].1.contains(CONNECTION_ERROR),
            "{api:?}: {retried:?}"
        );
        assert_eq!(final_text(&h), "recovered", "{api:?}");

        // Once per model call: the same failure again ends the run with it.
        let mut h = Harness::start_api(
            api,
            vec![Reply::sse(failing("One ")), Reply::sse(failing("Two "))],
            |_| {},
        )
        .await;
        h.prompt("hi");
        let events = h.until_end().await;
        let (status, error) = end_of(&events);
        assert_eq!(status, "failed", "{api:?}");
        assert!(error.unwrap().contains(CONNECTION_ERROR), "{api:?}");
        assert_eq!(h.server.requests().len(), 2, "{api:?}");
    }
}

/// The words of an in-stream error do not decide when it has a code: a client error whose
/// text says "try again" is not retried, an overload whose text says nothing is.
#[tokio::test]
async fn in_stream_codes_decide_over_the_words() {
    use support::litellm::{CONNECTION_ERROR, chat_failing};
    let bad = "litellm.BadRequestError: unknown parameter `foo`, fix it and try again";
    let mut h = Harness::start_api(
        Api::OpenaiChat,
        vec![
            Reply::sse(chat_failing("x", "400", bad)),
            Reply::sse(support::chat::text("never asked")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(
        end_of(&events),
        ("failed".to_string(), Some(bad.to_string()))
    );
    assert!(retries(&events).is_empty());
    assert_eq!(h.server.requests().len(), 1);

    // 503 is transient: retried as often as the policy allows, not only once.
    let mut h = Harness::start_api(
        Api::OpenaiChat,
        vec![
            Reply::sse(chat_failing("a", "503", CONNECTION_ERROR)),
            Reply::sse(chat_failing("b", "503", CONNECTION_ERROR)),
            Reply::sse(support::chat::text("third")),
        ],
        |_| {},
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(retries(&events).len(), 2);
    assert_eq!(final_text(&h), "third");
}

/// `[DONE]` in the middle of a tool call's arguments (before any finish reason) is a
/// response cut short, not a complete call: it is retried as a stream that just stops
/// is, and the cut call never runs — neither with the arguments it has so far nor with
/// `{}` for none.
#[tokio::test]
async fn done_inside_a_tool_call_is_a_cut_off_stream_and_the_call_never_runs() {
    use support::litellm::chat_call_cut_by_done;
    for partial in ["", r#"{"path": "sub"#] {
        let mut h = Harness::start_api(
            Api::OpenaiChat,
            vec![
                Reply::sse(chat_call_cut_by_done("c1", "ls", partial)),
                Reply::sse(support::chat::text("recovered")),
            ],
            |c| c.tools = agent::tools::Tools::from_names(&["ls", "read"]).unwrap(),
        )
        .await;
        h.prompt("hi");
        let events = h.until_end().await;
        assert_eq!(end_of(&events).0, "completed", "{partial:?}: {events:?}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::ToolExecutionStart { .. })),
            "{partial:?}: the cut call ran"
        );
        assert_eq!(
            retries(&events)
                .into_iter()
                .map(|r| r.1)
                .collect::<Vec<_>>(),
            ["the response stream ended before the response was complete"],
            "{partial:?}"
        );
        assert_eq!(final_text(&h), "recovered");
    }
}
