//! Every recorded provider stream of the conformance corpus (`../shared/conformance`, see
//! tests/it/conformance.rs), served by a real HTTP server on 127.0.0.1, read once directly by
//! the provider client and once through a real `agent proxy` process by the `agent-proxy`
//! provider: both give the same final message (content, stop reason, usage, refusal) and
//! the same error with the same retry semantics — a stream that fails midway keeps the
//! usage its provider reported (what the failed attempt cost).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::client::Provider;
use agent::llm::error::ProviderError;
use agent::llm::provider::Api;
use agent::llm::timeouts::Timeouts;
use agent::protocol::message::StopReason;
use serde_json::Value;
use std::time::Duration;
use support::corpus;
use support::harness::{base_url, provider_settings};
use support::proxy::Proxy;
use support::server::{FakeServer, Reply};

/// A running `agent proxy` whose only provider speaks `api` to `upstream`.
async fn start_proxy(upstream: &FakeServer, api: Api) -> Proxy {
    let base = base_url(upstream, api);
    let config = format!(
        "provider = \"upstream\"\nmodel = \"recorded\"\n\n[providers.upstream]\napi = \
         \"{}\"\nbase_url = \"{base}\"\napi_key_env = \"UPSTREAM_KEY\"\n",
        api.as_str()
    );
    Proxy::start(
        &config,
        &[
            ("UPSTREAM_KEY", "sk-upstream"),
            ("AGENT_PROXY_TOKENS", "tok-a"),
        ],
    )
    .await
}

/// The final message of one stream read by `provider`, without what names the provider or
/// the moment (and the cost: the proxy prices with its own catalog), and its error.
async fn read(provider: &Provider) -> (Value, Option<ProviderError>) {
    let corpus::Replayed {
        assembler,
        mut deltas,
        result,
    } = corpus::replay(provider).await;
    // As the engine does: a failed call's message is closed as an error, with the usage
    // the provider reported before it.
    let (message, _) = match &result {
        Ok(()) => assembler.finish(&mut deltas),
        Err(error) => assembler.fail(StopReason::Error, error.to_string(), &mut deltas),
    };
    let mut message = serde_json::to_value(&message).unwrap();
    let object = message.as_object_mut().unwrap();
    for key in ["timestamp", "provider", "model"] {
        object.remove(key);
    }
    if let Some(usage) = object.get_mut("usage").and_then(Value::as_object_mut) {
        usage.remove("cost");
    }
    (message, result.err())
}

fn provider(api: Api, base_url: &str, key: &str) -> Provider {
    let mut settings = provider_settings(base_url);
    settings.api = api;
    settings.api_key = Some(key.into());
    Provider::new(settings, Timeouts::all(Duration::from_secs(10))).unwrap()
}

#[tokio::test]
async fn every_recorded_stream_through_the_proxy_gives_the_direct_result() {
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
    for api in [Api::OpenaiChat, Api::Anthropic, Api::OpenaiResponses] {
        let recorded: Vec<_> = streams.iter().filter(|s| s.api == api).collect();
        if recorded.is_empty() {
            continue;
        }
        let direct_server = FakeServer::start(Vec::new()).await;
        let upstream = FakeServer::start(Vec::new()).await;
        let proxy = start_proxy(&upstream, api).await;
        let direct = provider(api, &base_url(&direct_server, api), "sk-direct");
        let proxied = provider(Api::AgentProxy, &proxy.origin, "tok-a");
        for stream in recorded {
            direct_server.push(Reply::raw(&stream.sse));
            upstream.push(Reply::raw(&stream.sse));
            let (want, want_error) = read(&direct).await;
            let (got, got_error) = read(&proxied).await;
            if got != want {
                failures.push(format!(
                    "{}:\n  direct  {want}\n  proxied {got}",
                    stream.file
                ));
            }
            let describe = |e: &Option<ProviderError>| {
                e.as_ref()
                    .map(|e| (e.to_string(), format!("{:?}", e.retry())))
            };
            if describe(&got_error) != describe(&want_error) {
                failures.push(format!(
                    "{}: direct error {:?}, proxied error {:?}",
                    stream.file,
                    describe(&want_error),
                    describe(&got_error)
                ));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} streams differ through the proxy:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        checked,
        streams.len(),
        "every stream went through the proxy"
    );
    assert!(checked >= 40, "checked {checked}");
}
