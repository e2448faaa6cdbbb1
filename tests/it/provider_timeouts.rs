//! A provider that hangs, in every way one can, through the Agent and its retry loop: no
//! response headers at all, keep-alives forever with no content, and the opposite, a live
//! answer trickling in so slowly that only its bytes show it is alive. Also waits the server
//! asks for: longer than the policy allows (fail at once, with the server's reason) or zero
//! (still a little). Timeouts are made small through the provider's settings; nothing here
//! measures time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::AgentConfig;
use agent::llm::provider::Api;
use agent::llm::timeouts::Timeouts;
use agent::protocol::event::AgentEvent;
use std::time::Duration;
use support::harness::{Harness, end_of, provider_with};
use support::server::{End, Reply};
use support::{anthropic, chat};

fn retry_errors(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AutoRetryStart { error_message, .. } => Some(error_message.clone()),
            _ => None,
        })
        .collect()
}

fn with_timeouts(api: Api, timeouts: Timeouts) -> impl FnOnce(&mut AgentConfig) {
    move |config| {
        let base = config.provider.settings().base_url.clone();
        config.provider = provider_with(api, &base, timeouts);
    }
}

fn answer(h: &Harness) -> String {
    let messages = h.agent.messages();
    messages.last().unwrap().as_assistant().unwrap().text()
}

#[tokio::test]
async fn a_server_that_never_sends_headers_times_out_and_is_retried() {
    let timeouts = Timeouts {
        response: Duration::from_secs(1),
        ..Timeouts::all(Duration::from_secs(10))
    };
    let mut h = Harness::start_api(
        Api::OpenaiChat,
        vec![Reply::Silent, Reply::sse(chat::text("here at last"))],
        with_timeouts(Api::OpenaiChat, timeouts),
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        retry_errors(&events),
        ["the provider did not answer within 1 s (response_timeout_secs)"]
    );
    assert_eq!(answer(&h), "here at last");
}

#[tokio::test]
async fn keep_alives_forever_do_not_keep_a_dead_answer_open() {
    // Pings arrive far more often than the idle limit, but no content ever does.
    let pinging =
        Reply::sse(anthropic::Stream::new().text("I will").unfinished()).then(End::KeepAlive {
            frame: anthropic::event("ping", serde_json::json!({"type": "ping"})),
            every: Duration::from_millis(20),
        });
    let timeouts = Timeouts {
        content: Duration::from_secs(1),
        ..Timeouts::all(Duration::from_secs(10))
    };
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![pinging, Reply::sse(anthropic::text("done"))],
        with_timeouts(Api::Anthropic, timeouts),
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        retry_errors(&events),
        ["the provider sent only keep-alives, no content, for 1 s (stream_content_timeout_secs)"]
    );
    assert_eq!(answer(&h), "done");

    // Comments and empty events count no more than pings do.
    for keep_alive in [": keep-alive\n\n", "data:\n\n"] {
        let silent = Reply::sse(vec![]).then(End::KeepAlive {
            frame: keep_alive.to_string(),
            every: Duration::from_millis(20),
        });
        let mut h = Harness::start_api(
            Api::OpenaiChat,
            vec![silent, Reply::sse(chat::text("done"))],
            with_timeouts(Api::OpenaiChat, timeouts),
        )
        .await;
        h.prompt("hi");
        let events = h.until_end().await;
        assert_eq!(end_of(&events).0, "completed", "{keep_alive:?}");
        assert_eq!(retry_errors(&events).len(), 1, "{keep_alive:?}");
    }
}

#[tokio::test]
async fn a_live_answer_trickling_bytes_is_not_idle() {
    // One event takes twelve pauses to arrive, together twice the idle limit, while no pause
    // comes near it (a loaded machine may stretch a pause, never by a second).
    let mut frames = chat::text_deltas(&["slowly but surely"]);
    let delta = frames.remove(1);
    let pieces: Vec<String> = delta
        .as_bytes()
        .chunks(delta.len().div_ceil(12))
        .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
        .collect();
    frames.splice(1..1, pieces);
    let mut h = Harness::start_api(
        Api::OpenaiChat,
        vec![Reply::sse(frames).slowly(Duration::from_millis(250))],
        |config| {
            config.retry.max_retries = 0;
            with_timeouts(
                Api::OpenaiChat,
                Timeouts {
                    idle: Duration::from_millis(1500),
                    ..Timeouts::all(Duration::from_secs(10))
                },
            )(config);
        },
    )
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    assert_eq!(answer(&h), "slowly but surely");
}

#[tokio::test]
async fn a_wait_longer_than_the_policy_allows_fails_at_once_with_the_reason() {
    let mut h = Harness::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"You have used up today's requests"}}"#,
        )
        .with_header("retry-after", "3600"),
        Reply::sse(chat::text("never asked for")),
    ])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    assert_eq!(
        error.unwrap(),
        "HTTP 429 Too Many Requests: You have used up today's requests (the provider asks to \
         wait 3600 s before trying again, more than retry.max_retry_delay_ms allows)"
    );
    assert!(retry_errors(&events).is_empty());
    assert_eq!(
        h.server.requests().len(),
        1,
        "no retry after a refusal to wait"
    );
}

#[tokio::test]
async fn retry_after_zero_still_backs_off() {
    let mut h = Harness::start(vec![
        Reply::status(503, r#"{"error":{"message":"busy"}}"#).with_header("retry-after", "0"),
        Reply::sse(chat::text("ok")),
    ])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let delays: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AutoRetryStart { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect();
    // The harness's backoff starts at 10 ms (±20 %).
    assert_eq!(delays.len(), 1);
    assert!(delays[0] >= 8, "{delays:?}");
}

#[tokio::test]
async fn only_what_can_change_is_retried_and_a_server_error_once() {
    let deterministic = r#"{"error":{"message":"Failed to parse tool call arguments as JSON"}}"#;
    let mut h = Harness::start(vec![
        Reply::status(500, deterministic),
        Reply::status(500, deterministic),
        Reply::sse(chat::text("never asked for")),
    ])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    assert_eq!(
        error.unwrap(),
        "HTTP 500 Internal Server Error: Failed to parse tool call arguments as JSON"
    );
    assert_eq!(retry_errors(&events).len(), 1);
    assert_eq!(h.server.requests().len(), 2, "a 500 is retried once");

    // Gateways and overload are retried as often as the policy allows.
    let mut h = Harness::start(vec![
        Reply::status(502, "bad gateway"),
        Reply::status(504, "gateway timeout"),
        Reply::status(500, r#"{"error":{"message":"model overloaded"}}"#),
        Reply::sse(chat::text("fine")),
    ])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(retry_errors(&events).len(), 3);

    // A request the server rejects is not sent again.
    let mut h = Harness::start(vec![
        Reply::status(409, r#"{"error":{"message":"conflict"}}"#),
        Reply::sse(chat::text("never asked for")),
    ])
    .await;
    h.prompt("hi");
    assert_eq!(end_of(&h.until_end().await).0, "failed");
    assert_eq!(h.server.requests().len(), 1);
}
