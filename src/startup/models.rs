//! The engine's `Models` over the resolved configuration: the built-in and configured
//! providers, `Settings::resolve_model`, the models a user can switch to, clients with the
//! configured timeouts, and the profiles of `[profiles]` (`config::profiles` for how a
//! profile's keys layer over what the session started with).

use crate::agent::commands::models::Models;
use crate::agent::commands::profiles::ProfileSettings;
use crate::config::profiles::{self, Layer};
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

    fn profiles(&self) -> Vec<String> {
        self.settings.profiles.keys().cloned().collect()
    }

    fn profile(&self, name: &str) -> Result<ProfileSettings, String> {
        let settings = &self.settings;
        let (Some(profile), Some(base)) = (settings.profiles.get(name), &settings.unprofiled)
        else {
            return Err(profiles::unknown(name, &settings.profiles));
        };
        let layers = [
            Layer {
                provider: profile.provider.as_deref(),
                model: profile.model.as_deref(),
            },
            Layer {
                provider: Some(&base.provider),
                model: Some(&base.model),
            },
        ];
        let (provider, _, model) = profiles::pick(&layers, &base.provider);
        let model = model
            .map(String::from)
            .or_else(|| {
                BUILTIN_PROVIDERS
                    .iter()
                    .find(|p| p.name == provider)
                    .and_then(|p| p.default_model)
                    .map(String::from)
            })
            .ok_or_else(|| {
                format!(
                    "profile `{name}`: provider `{provider}` has no default model: set `model` in [profiles.{name}]"
                )
            })?;
        let (mut provider_settings, model) = settings
            .resolve_model(provider, &model)
            .map_err(|e| format!("profile `{name}`: {e}"))?;
        provider_settings.account = self.account(Some(name), provider);
        let mode = profile.sandbox.unwrap_or(base.sandbox);
        let started = &settings.tool_settings.sandbox;
        let sandbox = std::iter::once(started)
            .chain(&settings.sandboxes)
            .find(|sandbox| sandbox.mode == mode)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "profile `{name}`: the {} sandbox was not prepared at start",
                    mode.as_str()
                )
            })?;
        Ok(ProfileSettings {
            name: name.to_string(),
            provider: provider_settings,
            model,
            permission_mode: profile.permission_mode.unwrap_or(base.permission_mode),
            sandbox,
            mcp_servers: profile.mcp_servers.clone(),
        })
    }

    fn account(&self, profile: Option<&str>, provider: &str) -> Option<String> {
        self.settings.profile_account(profile, provider)
    }
}
