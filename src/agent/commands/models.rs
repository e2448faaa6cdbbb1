//! Choosing a model by name: the one reading of `provider/model` every front end, custom
//! command and sub-agent definition goes through, over `Models` — what the configuration
//! offers, handed in from outside (the engine does not read the config; `startup` does).
//!
//! `provider/model` is split at the first `/` only when the part before it names a known
//! provider; otherwise the whole text is a model of the current provider, so an id with a
//! slash of its own works (`meta-llama/llama-3.1-8b` on `openrouter`). A provider or model
//! that cannot be used is an error that says why, never a silent fallback.

use crate::llm::client::Provider;
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;
use crate::protocol::command::ModelRef;
use crate::protocol::outcome::{ModelCostSummary, ModelSummary};
use std::sync::Arc;

/// The models the configuration offers.
pub trait Models: Send + Sync {
    /// Every provider name that can be chosen (built in and configured).
    fn providers(&self) -> Vec<String>;

    /// Whether `name` is a provider that can be chosen (not whether it works).
    fn knows_provider(&self, name: &str) -> bool {
        self.providers().iter().any(|p| p == name)
    }

    /// The settings of `provider` and what is known of `model` on it; `Err` says why it
    /// cannot be used (an unknown provider, naming the known ones; a missing base URL).
    fn resolve(&self, provider: &str, model: &str)
    -> Result<(ProviderSettings, ModelInfo), String>;

    /// The models a user could switch to, in a stable order; `current` (provider, model)
    /// is among them.
    fn available(&self, current: (&str, &str)) -> Vec<(ProviderSettings, ModelInfo)>;

    /// A client for `provider`, with the configured timeouts.
    fn connect(&self, provider: ProviderSettings) -> Result<Arc<Provider>, String>;

    /// The profiles that can be switched to, by name.
    fn profiles(&self) -> Vec<String> {
        Vec::new()
    }

    /// What switching to profile `name` sets; `Err` says why it cannot be used (an unknown
    /// profile, naming the known ones).
    fn profile(&self, name: &str) -> Result<super::profiles::ProfileSettings, String> {
        Err(format!("unknown profile `{name}`: none is configured"))
    }

    /// The stored credential (account) `provider` is called with while `profile` is in
    /// use; `None`: the provider's default one.
    fn account(&self, _profile: Option<&str>, _provider: &str) -> Option<String> {
        None
    }
}

/// A model ready to call.
pub type Chosen = (Arc<Provider>, ModelInfo);

/// `text` (`provider/model`, or a model of `current_provider`) as a provider's settings and
/// the model.
pub fn parse(
    text: &str,
    current_provider: &str,
    models: &dyn Models,
) -> Result<(ProviderSettings, ModelInfo), String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("no model given: name one as provider/model, or a model".to_string());
    }
    match text.split_once('/') {
        Some((provider, model)) if models.knows_provider(provider) => {
            if model.is_empty() {
                return Err(format!("no model given after `{provider}/`"));
            }
            models.resolve(provider, model)
        }
        _ => models.resolve(current_provider, text),
    }
}

/// A `ModelRef` as a provider's settings and the model.
pub fn resolve(
    model: &ModelRef,
    current_provider: &str,
    models: &dyn Models,
) -> Result<(ProviderSettings, ModelInfo), String> {
    match model {
        ModelRef::Text(text) => parse(text, current_provider, models),
        ModelRef::Parts { provider, model } => models.resolve(provider, model),
    }
}

/// `parse`, connected: the provider to call the model with.
pub fn choose(text: &str, current_provider: &str, models: &dyn Models) -> Result<Chosen, String> {
    let (provider, model) = parse(text, current_provider, models)?;
    Ok((models.connect(provider)?, model))
}

/// How a model is reported (`Outcome::Model`, `get_available_models`).
pub fn summary(provider: &ProviderSettings, model: &ModelInfo) -> ModelSummary {
    ModelSummary {
        provider: provider.name.clone(),
        api: provider.api.as_str().to_string(),
        base_url: provider.base_url.clone(),
        id: model.id.clone(),
        reasoning: model.reasoning,
        images: model.images,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        cost: ModelCostSummary {
            input: model.cost.input,
            output: model.cost.output,
            cache_read: model.cost.cache_read,
            cache_write: model.cost.cache_write,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::provider::Api;

    /// Two providers; `broken` is known but cannot be used.
    struct Fake;

    impl Models for Fake {
        fn providers(&self) -> Vec<String> {
            vec!["openrouter".into(), "local".into(), "broken".into()]
        }

        fn resolve(
            &self,
            provider: &str,
            model: &str,
        ) -> Result<(ProviderSettings, ModelInfo), String> {
            match provider {
                "broken" => Err("`providers.broken.base_url`: missing".into()),
                "openrouter" | "local" => Ok((
                    ProviderSettings {
                        name: provider.into(),
                        api: Api::OpenaiChat,
                        base_url: "http://127.0.0.1:9/v1".into(),
                        api_key: None,
                        api_key_env: None,
                        api_key_command: None,
                        headers: vec![],
                        account: None,
                    },
                    ModelInfo::unknown(model),
                )),
                other => Err(format!("unknown provider `{other}`")),
            }
        }

        fn available(&self, _: (&str, &str)) -> Vec<(ProviderSettings, ModelInfo)> {
            Vec::new()
        }

        fn connect(&self, _: ProviderSettings) -> Result<Arc<Provider>, String> {
            Err("not in this test".into())
        }
    }

    fn chosen(text: &str, current: &str) -> Result<String, String> {
        parse(text, current, &Fake).map(|(p, m)| format!("{}/{}", p.name, m.id))
    }

    #[test]
    fn a_slash_splits_only_at_a_known_provider() {
        assert_eq!(chosen("local/qwen", "openrouter").unwrap(), "local/qwen");
        assert_eq!(
            chosen("openrouter/meta-llama/x", "local").unwrap(),
            "openrouter/meta-llama/x"
        );
        // `meta-llama` is no provider: the whole id is a model of the current one.
        assert_eq!(
            chosen("meta-llama/x", "openrouter").unwrap(),
            "openrouter/meta-llama/x"
        );
        assert_eq!(chosen(" qwen ", "local").unwrap(), "local/qwen");
    }

    #[test]
    fn a_provider_that_cannot_be_used_says_why() {
        let why = chosen("broken/m", "local").unwrap_err();
        assert!(why.contains("base_url"), "{why}");
        assert!(chosen("", "local").unwrap_err().contains("no model"));
        assert!(chosen("local/", "local").unwrap_err().contains("no model"));
        let why = resolve(
            &ModelRef::Parts {
                provider: "nope".into(),
                model: "m".into(),
            },
            "local",
            &Fake,
        )
        .unwrap_err();
        assert!(why.contains("unknown provider `nope`"), "{why}");
    }
}
