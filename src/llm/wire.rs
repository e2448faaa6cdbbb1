//! What a wire API is to the rest of the agent: the `WireApi` trait (its name in the config,
//! its endpoint, how the key and its own headers go, the request body, the decoder of its
//! answer, whether it has a web search of its own, and a hook to classify the errors it
//! reports in its own terms), and the one place every API is registered (`Api::wire`).
//!
//! Adding a wire API:
//! 1. its module `src/llm/NEW/` with `request.rs`, `decode.rs` and, in `mod.rs`, a unit struct
//!    implementing `WireApi` (the shared framing — keep-alives, `[DONE]` — is done before its
//!    decoder sees a frame, and the history is prepared before its body is built);
//! 2. its `pub mod` line in `src/llm/mod.rs`;
//! 3. its `Api` variant, its entry in `Api::ALL` and its arm in `Api::wire` below.
//!
//! Nothing else names an API: the config accepts exactly the registered names (and its errors
//! list them), the client, the headers and the agent's web-search notice ask the trait.

use super::error::ProviderError;
use super::error_codes::{StreamError, Verdict};
use super::provider::{Api, ProviderSettings};
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::{agent_proxy, anthropic, openai_chat, openai_responses};
use serde_json::Value;

/// One wire API: everything the client needs to ask a provider that speaks it.
pub trait WireApi: Send + Sync + 'static {
    /// Its name in the config (`api = "…"`), in sessions and in messages.
    fn name(&self) -> &'static str;

    /// The URL a request goes to, for the provider's base URL (without a trailing `/`).
    fn endpoint(&self, base_url: &str) -> String;

    /// The header that carries the key, and its value.
    fn auth_header(&self, key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    /// Headers every request of this API carries (before the provider's own).
    fn extra_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The JSON body of one streaming request; the history in `request` is already prepared
    /// (`replay::prepare`) for any API.
    fn build_body(
        &self,
        request: &ModelRequest<'_>,
        provider: &ProviderSettings,
    ) -> serde_json::Result<Vec<u8>>;

    /// A decoder for one response.
    fn decoder(&self) -> Box<dyn WireDecoder>;

    /// Whether the API has a web search of the provider's own (`[web] search`).
    fn native_web_search(&self) -> bool {
        false
    }

    /// What an error the provider reported inside a stream, with no code the shared table
    /// (`error_codes`) knows, means for another attempt in this API's own terms; `None`
    /// leaves it to the shared judgement of its text.
    fn classify(&self, _error: &StreamError) -> Option<Verdict> {
        None
    }
}

/// Turns one response of a wire API into `StreamEvent`s.
pub trait WireDecoder: Send {
    /// One SSE frame's event name and data (not blank, not `[DONE]`).
    fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// A whole JSON body: the API's non-streaming completion object (or an error object), as
    /// the events its stream would have carried, ending with `Done`. `text` is the body as
    /// read, for messages.
    fn decode_whole(
        &mut self,
        body: Value,
        text: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;
}

impl Api {
    /// Every registered wire API, in the order the config's messages list them.
    pub const ALL: [Api; 4] = [
        Api::OpenaiChat,
        Api::OpenaiResponses,
        Api::Anthropic,
        Api::AgentProxy,
    ];

    /// The registration: the implementation of each API.
    pub fn wire(self) -> &'static dyn WireApi {
        match self {
            Api::OpenaiChat => &openai_chat::OpenaiChat,
            Api::OpenaiResponses => &openai_responses::OpenaiResponses,
            Api::Anthropic => &anthropic::Anthropic,
            Api::AgentProxy => &agent_proxy::AgentProxy,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.wire().name()
    }

    /// The API of a config name (`api = "…"`).
    pub fn from_name(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.as_str() == name)
    }

    /// The registered names (`Api::ALL`'s), for messages.
    pub fn names() -> Vec<&'static str> {
        Api::ALL.iter().map(|api| api.as_str()).collect()
    }
}

impl<'de> serde::Deserialize<'de> for Api {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Api::from_name(&name).ok_or_else(|| {
            let expected: Vec<String> = Api::names().iter().map(|n| format!("`{n}`")).collect();
            serde::de::Error::custom(format!(
                "unknown variant `{name}`, expected one of {}",
                expected.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Provider {
        api: Api,
    }

    #[test]
    fn every_registered_api_round_trips_through_its_name() {
        for api in Api::ALL {
            let name = api.wire().name();
            assert_eq!(api.as_str(), name);
            let parsed: Provider = toml::from_str(&format!("api = \"{name}\"")).unwrap();
            assert_eq!(parsed.api, api, "{name}");
        }
        let mut names = Api::names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Api::ALL.len(), "two APIs share a name");
    }

    #[test]
    fn an_unknown_name_lists_exactly_the_registered_ones() {
        let error = toml::from_str::<Provider>("api = \"gemini\"")
            .err()
            .unwrap()
            .to_string();
        let expected = error.rsplit("expected one of ").next().unwrap();
        let listed: Vec<&str> = expected
            .trim()
            .split(", ")
            .map(|n| n.trim_matches('`'))
            .collect();
        assert_eq!(listed, Api::names(), "{error}");
        assert!(error.contains("unknown variant `gemini`"), "{error}");
    }
}
