//! The engine's `Models` over the resolved configuration: the built-in and configured
//! providers, `Settings::resolve_model`, the models a user can switch to, and clients with
//! the configured timeouts.

use crate::agent::commands::models::Models;
use crate::config::{BUILTIN_PROVIDERS, Settings};
use crate::llm::client::Provider;
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;
use std::sync::Arc;

pub struct SettingsModels {
    settings: Settings,
}

impl SettingsModels {
    pub fn new(settings: Settings) -> SettingsModels {
        SettingsModels { settings }
    }
}

impl Models for SettingsModels {
    /// Built in first, then the configured ones, as `Settings::resolve_model` lists them.
    fn providers(&self) -> Vec<String> {
        let builtin = BUILTIN_PROVIDERS.iter().map(|p| p.name.to_string());
        let configured = self
            .settings
            .providers
            .keys()
            .filter(|name| !BUILTIN_PROVIDERS.iter().any(|p| p.name == name.as_str()))
            .cloned();
        builtin.chain(configured).collect()
    }

    fn knows_provider(&self, name: &str) -> bool {
        self.settings.providers.contains_key(name)
            || BUILTIN_PROVIDERS.iter().any(|p| p.name == name)
    }

    fn resolve(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<(ProviderSettings, ModelInfo), String> {
        self.settings.resolve_model(provider, model)
    }

    fn available(&self, current: (&str, &str)) -> Vec<(ProviderSettings, ModelInfo)> {
        self.settings
            .available_models(current)
            .into_iter()
            .map(|m| (m.provider, m.model))
            .collect()
    }

    fn connect(&self, provider: ProviderSettings) -> Result<Arc<Provider>, String> {
        Provider::new(provider, self.settings.timeouts)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
}
