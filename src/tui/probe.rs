//! First run: with no API key and nothing configured, the interface still opens and says
//! how to connect. In the background it asks the usual local servers (Ollama, LM Studio,
//! llama.cpp, vLLM — on 127.0.0.1 only, with a short timeout) which models they serve and
//! offers the ones that answer.

use crate::config::{BUILTIN_PROVIDERS, Settings};
use crate::llm::provider::Api;
use serde_json::Value;
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_millis(600);

/// Whether the configured provider has no way to get a key (so nothing would work yet): none
/// given, in its variable, from a command, or stored by `agent login`, and the server is not
/// on this machine.
pub fn missing_key(settings: &Settings) -> bool {
    let provider = &settings.provider;
    let has_key = provider.api_key.as_ref().is_some_and(|k| !k.is_empty())
        || provider.api_key_command.is_some()
        || provider
            .api_key_env
            .as_ref()
            .and_then(|var| crate::secrets::env_key(var))
            .is_some_and(|v| !v.trim().is_empty())
        || crate::auth::requests::has_stored_for(&provider.name, provider.account.as_deref());
    let local = BUILTIN_PROVIDERS
        .iter()
        .any(|b| b.api_key_env.is_none() && b.base_url == provider.base_url)
        || crate::llm::provider::host_of(&provider.base_url).starts_with("127.")
        || crate::llm::provider::host_of(&provider.base_url) == "localhost";
    !has_key && !local
}

pub fn welcome(settings: &Settings) -> String {
    let var = settings
        .provider
        .api_key_env
        .clone()
        .unwrap_or_else(|| "an API key".to_string());
    format!(
        "Welcome! `{}` needs {var} to be set (or --api-key, or `agent login --provider {}` \
         to keep a key or sign in). Other ways to connect: \
         `agent --provider anthropic` with ANTHROPIC_API_KEY, a local server with \
         `agent --provider ollama --model NAME` (or lmstudio, llama.cpp, vllm), or any \
         OpenAI-compatible endpoint with --base-url. Defaults go in {}. Looking for local servers…",
        settings.provider.name,
        settings.provider.name,
        settings.paths.config_file.display()
    )
}

/// Local servers that answered, with a few of their models.
pub async fn local_servers() -> Vec<String> {
    // Local servers speak plain http: no certificate store to load.
    let Ok(client) = crate::llm::transport::plain_http_client()
        .timeout(PROBE_TIMEOUT)
        .build()
    else {
        return Vec::new();
    };
    let probes = BUILTIN_PROVIDERS
        .iter()
        .filter(|p| {
            p.api_key_env.is_none()
                && p.api == Api::OpenaiChat
                && p.base_url.starts_with("http://127.0.0.1")
        })
        .map(|p| {
            let client = client.clone();
            async move {
                let response = client
                    .get(format!("{}/models", p.base_url))
                    .send()
                    .await
                    .ok()?;
                let bytes = response.bytes().await.ok()?;
                let body: Value = serde_json::from_slice(&bytes).ok()?;
                let models: Vec<String> = body["data"]
                    .as_array()?
                    .iter()
                    .filter_map(|m| m["id"].as_str().map(String::from))
                    .take(5)
                    .collect();
                let example = models
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "MODEL".to_string());
                Some(format!(
                    "Found {} at {} (models: {}). Use it with /model {}/{example}",
                    p.name,
                    p.base_url,
                    if models.is_empty() {
                        "none listed".to_string()
                    } else {
                        models.join(", ")
                    },
                    p.name
                ))
            }
        });
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}
