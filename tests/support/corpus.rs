//! The conformance corpus of recorded provider streams: `AGENT_CONFORMANCE_DIR` when set (it
//! must hold one), else `../shared/conformance` beside the repository. Tests that use it say
//! they skipped when it is absent (a plain clone).

use agent::llm::provider::Api;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENT_CONFORMANCE_DIR") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("manifest.json").is_file(),
            "AGENT_CONFORMANCE_DIR={} has no manifest.json",
            dir.display()
        );
        return Some(dir);
    }
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    beside.join("manifest.json").is_file().then_some(beside)
}

/// The wire API a manifest's `protocol` names.
pub fn api_of(protocol: &str) -> Option<Api> {
    match protocol {
        "chat" => Some(Api::OpenaiChat),
        "anthropic" => Some(Api::Anthropic),
        "responses" => Some(Api::OpenaiResponses),
        _ => None,
    }
}

/// One recorded stream of the manifest.
pub struct Stream {
    pub file: String,
    pub api: Api,
    pub sse: String,
    /// What a correct assembler makes of it.
    pub expected: Value,
}

/// Every stream of the manifest in `dir` (a protocol without an API here panics: the corpus
/// and the tests must agree).
pub fn streams(dir: &Path) -> Vec<Stream> {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    manifest["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|stream| {
            let protocol = stream["protocol"].as_str().unwrap();
            let file = stream["file"].as_str().unwrap().to_string();
            let expected = stream["expected"].as_str().unwrap();
            Stream {
                api: api_of(protocol).unwrap_or_else(|| panic!("{file}: protocol {protocol}")),
                sse: std::fs::read_to_string(dir.join(&file)).unwrap(),
                expected: serde_json::from_str(
                    &std::fs::read_to_string(dir.join(expected)).unwrap(),
                )
                .unwrap(),
                file,
            }
        })
        .collect()
}

/// What one recorded stream became: the assembler that read it (to finish or fail as the
/// caller needs), the events it produced so far, and the provider's outcome.
pub struct Replayed {
    pub assembler: agent::llm::assembler::Assembler,
    pub deltas: Vec<agent::protocol::event::AssistantMessageEvent>,
    pub result: Result<(), agent::llm::error::ProviderError>,
}

/// Ask `provider` (pointed at a server replaying a recorded stream) for an answer to an
/// empty request for the model `recorded`, through the real client, into an assembler.
pub async fn replay(provider: &agent::llm::client::Provider) -> Replayed {
    use agent::llm::request::{ModelRequest, ThinkingLevel};
    let model = agent::llm::model::ModelInfo::unknown("recorded");
    let request = ModelRequest {
        model: &model,
        system_prompt: "",
        messages: &[],
        tools: &[],
        thinking: ThinkingLevel::Off,
        web_search: None,
        cache_key: None,
    };
    let mut assembler = agent::llm::assembler::Assembler::new("recorded", "recorded");
    let mut deltas = Vec::new();
    let result = provider
        .stream(
            &request,
            &tokio_util::sync::CancellationToken::new(),
            &mut |event| assembler.apply(event, &mut deltas),
        )
        .await;
    Replayed {
        assembler,
        deltas,
        result,
    }
}
