//! The models a user can switch to (`get_available_models`, `cycle_model`): for every
//! provider whose key is at hand, the models known for it — the built-in catalog's for
//! OpenAI's and Anthropic's own providers, its `[providers.NAME.models.ID]` entries, its
//! default model — and the model in use.

use super::{BUILTIN_PROVIDERS, Settings, builtin};
use crate::llm::catalog::{self, Vendor};
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;

/// One model of one provider, ready to switch to.
#[derive(Clone, Debug)]
pub struct AvailableModel {
    pub provider: ProviderSettings,
    pub model: ModelInfo,
}

impl Settings {
    /// Every model the user could switch to, in a stable order (providers as built in,
    /// then as configured; within one, its default model, the catalog's, the configured
    /// ones). `current` (provider, model id) is always in the list.
    pub fn available_models(&self, current: (&str, &str)) -> Vec<AvailableModel> {
        let mut names: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.name).collect();
        names.extend(
            self.providers
                .keys()
                .map(String::as_str)
                .filter(|name| builtin::builtin(name).is_none()),
        );
        let mut available = Vec::new();
        for name in names {
            let is_current = name == current.0;
            let mut ids: Vec<&str> = Vec::new();
            if let Some(default) = builtin::builtin(name).and_then(|b| b.default_model) {
                ids.push(default);
            }
            let vendor = match name {
                "openai" | "openai-responses" => Some(Vendor::OpenAi),
                "anthropic" => Some(Vendor::Anthropic),
                _ => None,
            };
            ids.extend(
                catalog::models()
                    .filter(|(_, of)| Some(*of) == vendor)
                    .map(|(id, _)| id),
            );
            if let Some(config) = self.providers.get(name) {
                ids.extend(config.models.keys().map(String::as_str));
            }
            if is_current {
                ids.push(current.1);
            }
            let mut seen = std::collections::HashSet::new();
            ids.retain(|id| seen.insert(*id));
            for id in ids {
                let Ok((provider, model)) = self.resolve_model(name, id) else {
                    break;
                };
                if !is_current && !has_key(&provider) {
                    break;
                }
                available.push(AvailableModel { provider, model });
            }
        }
        available
    }
}

/// Whether requests to `provider` could be authenticated: a key given, a command to fetch
/// one, a variable that holds one, none needed (local servers), or one `agent login`
/// stored (the account providers, `chatgpt` and `copilot`, need that).
fn has_key(provider: &ProviderSettings) -> bool {
    let account = crate::auth::command::ACCOUNT_PROVIDERS
        .iter()
        .any(|(name, _)| *name == provider.name);
    provider.api_key.as_deref().is_some_and(|k| !k.is_empty())
        || provider.api_key_command.is_some()
        || match &provider.api_key_env {
            None if !account => true,
            None => false,
            Some(var) => crate::secrets::env_key(var).is_some_and(|v| !v.is_empty()),
        }
        || crate::auth::requests::has_stored_for(&provider.name, provider.account.as_deref())
}
