//! The provider and model a run starts with: the provider named by `--provider` or the file
//! (config entry merged over the built-in one, then `--base-url` / `--api-key`), the model
//! (`--model`, the file's for the file's provider, the built-in default), and the catalog
//! entry the config tunes.

use super::FileErrors;
use crate::cli::Cli;
use crate::config::builtin::{self, BUILTIN_PROVIDERS, BuiltinProvider};
use crate::config::file::{FileConfig, ProviderConfig};
use crate::config::profiles::{self, Layer, ProfileTable};
use crate::config::{ConfigError, Overrides};
use crate::llm::catalog;
use crate::llm::model::{ModelCost, ModelInfo};
use crate::llm::provider::{Api, ProviderSettings};
use std::path::Path;

/// What the command line and the file chose.
pub(super) struct ModelChoice {
    pub provider: ProviderSettings,
    pub model: ModelInfo,
    pub overrides: Overrides,
    /// The command line chose the provider, model or endpoint.
    pub model_from_flags: bool,
}

pub(super) fn resolve(
    cli: &Cli,
    file: &FileConfig,
    profile: Option<(&str, &ProfileTable)>,
    config_path: &Path,
    errors: &FileErrors<'_>,
) -> Result<ModelChoice, ConfigError> {
    // Highest first: the command line, the profile, the file.
    let layers = [
        Layer {
            provider: cli.provider.as_deref(),
            model: cli.model.as_deref(),
        },
        Layer {
            provider: profile.and_then(|(_, p)| p.provider.as_deref()),
            model: profile.and_then(|(_, p)| p.model.as_deref()),
        },
        Layer {
            provider: file.provider.as_deref(),
            model: file.model.as_deref(),
        },
    ];
    let (provider_name, chosen_at, layered_model) = profiles::pick(&layers, "openai");
    let provider_config = file.providers.get(provider_name);
    let builtin = builtin::builtin(provider_name);
    if provider_config.is_none() && builtin.is_none() {
        let message = format!(
            "unknown provider `{provider_name}` ({})",
            known_providers(file)
        );
        return Err(match (chosen_at, profile) {
            (0, _) => ConfigError::Flag {
                flag: "--provider",
                message,
            },
            (1, Some((name, _))) => errors.at(format!("profiles.{name}.provider"), message),
            _ => errors.at("provider", message),
        });
    }
    // The profile's account goes with the profile's provider, not with another one the
    // command line names (a profile naming no provider: with the provider in use).
    let account = profile.and_then(|(_, p)| {
        let own = p.provider.as_deref().is_none_or(|own| own == provider_name);
        p.account.clone().filter(|_| own)
    });
    let overrides = Overrides {
        provider: provider_name.to_string(),
        base_url: cli.base_url.clone(),
        api_key: cli.api_key.clone(),
    };
    let mut provider = provider_settings(&overrides, provider_name, provider_config, builtin)
        .map_err(errors.pair())?;
    provider.account = account;
    let model_id = layered_model
        .map(String::from)
        .or_else(|| builtin.and_then(|b| b.default_model).map(String::from))
        .ok_or_else(|| ConfigError::Flag {
            flag: "--model",
            message: format!(
                "provider `{provider_name}` has no default model: pass --model or set `model` in {}",
                config_path.display()
            ),
        })?;
    Ok(ModelChoice {
        provider,
        model: model_info(&model_id, provider_config),
        overrides,
        model_from_flags: cli.provider.is_some() || cli.model.is_some() || cli.base_url.is_some(),
    })
}

pub(in crate::config) fn known_providers(file: &FileConfig) -> String {
    let mut names: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.name).collect();
    names.extend(
        file.providers
            .keys()
            .map(String::as_str)
            .filter(|n| builtin::builtin(n).is_none()),
    );
    format!("known: {}", names.join(", "))
}

/// Merge a configured provider over the built-in one of the same name.
pub(in crate::config) fn provider_settings(
    overrides: &Overrides,
    name: &str,
    config: Option<&ProviderConfig>,
    builtin: Option<&BuiltinProvider>,
) -> Result<ProviderSettings, (String, String)> {
    let key = |field: &str| format!("providers.{name}.{field}");
    let api = config
        .and_then(|c| c.api)
        .or(builtin.map(|b| b.api))
        .ok_or_else(|| (key("api"), missing_api()))?;
    let env_base_url = builtin
        .and_then(|b| b.base_url_env)
        .and_then(|var| std::env::var(var).ok())
        .filter(|v| !v.trim().is_empty());
    let base_url = overrides
        .base_url
        .clone()
        .or_else(|| config.and_then(|c| c.base_url.clone()))
        .or(env_base_url)
        .or(builtin.map(|b| b.base_url.to_string()))
        .ok_or_else(|| {
            (
                key("base_url"),
                "missing: the provider needs a base URL".to_string(),
            )
        })?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err((
            key("base_url"),
            format!("`{base_url}` is not an http:// or https:// URL"),
        ));
    }
    Ok(ProviderSettings {
        name: name.to_string(),
        api,
        base_url,
        api_key: overrides.api_key.clone(),
        api_key_env: config
            .and_then(|c| c.api_key_env.clone())
            .or(builtin.and_then(|b| b.api_key_env).map(String::from)),
        api_key_command: config.and_then(|c| c.api_key_command.clone()),
        headers: config
            .map(|c| {
                c.headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        account: None,
    })
}

/// A provider without `api`: the message lists every registered wire API.
fn missing_api() -> String {
    let quoted: Vec<String> = Api::names().iter().map(|n| format!("\"{n}\"")).collect();
    let list = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    };
    format!("missing: set it to {list}")
}

/// The catalog's entry for `id` (or the defaults for an unknown model), with every field the
/// config sets for it taking precedence: the model's own entry first, then the provider's.
pub(in crate::config) fn model_info(id: &str, provider: Option<&ProviderConfig>) -> ModelInfo {
    let mut info = catalog::lookup(id).unwrap_or_else(|| ModelInfo::unknown(id));
    let config = provider.and_then(|p| p.models.get(id));
    if let Some(images) = config
        .and_then(|c| c.images)
        .or(provider.and_then(|p| p.images))
    {
        info.images = images;
    }
    if let Some(config) = config {
        info.context_window = config.context_window.unwrap_or(info.context_window);
        info.max_output_tokens = config.max_output_tokens.unwrap_or(info.max_output_tokens);
        info.cost = ModelCost {
            input: config.cost_input.unwrap_or(info.cost.input),
            output: config.cost_output.unwrap_or(info.cost.output),
            cache_read: config.cost_cache_read.unwrap_or(info.cost.cache_read),
            cache_write: config.cost_cache_write.unwrap_or(info.cost.cache_write),
        };
        info.reasoning = config.reasoning.unwrap_or(info.reasoning);
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::{ModelConfig, parse};

    #[test]
    fn config_entries_override_the_catalog_field_by_field() {
        let known = model_info("claude-haiku-4-5", None);
        assert_eq!(known.max_output_tokens, 64_000);
        assert_eq!(known.cost.input, 1.0);
        let mut provider = ProviderConfig::default();
        provider.models.insert(
            "claude-haiku-4-5".into(),
            ModelConfig {
                max_output_tokens: Some(1000),
                cost_output: Some(7.0),
                ..ModelConfig::default()
            },
        );
        let tuned = model_info("claude-haiku-4-5", Some(&provider));
        assert_eq!(tuned.max_output_tokens, 1000);
        assert_eq!(tuned.cost.output, 7.0);
        assert_eq!(
            tuned.cost.input, 1.0,
            "unset fields keep the catalog's value"
        );
        assert_eq!(tuned.context_window, 200_000);

        let unknown = model_info("qwen3-coder", None);
        assert_eq!(unknown, ModelInfo::unknown("qwen3-coder"));
        assert_eq!(unknown.context_window, 128_000);
        assert_eq!(unknown.cost, ModelCost::default());
    }

    #[test]
    fn image_input_comes_from_the_model_then_the_provider_then_the_catalog() {
        assert!(model_info("gpt-4.1", None).images);
        assert!(!model_info("qwen3-coder", None).images);
        let mut provider = ProviderConfig {
            images: Some(true),
            ..ProviderConfig::default()
        };
        assert!(model_info("qwen2.5-vl", Some(&provider)).images);
        provider.models.insert(
            "qwen3-coder".into(),
            ModelConfig {
                images: Some(false),
                ..ModelConfig::default()
            },
        );
        assert!(!model_info("qwen3-coder", Some(&provider)).images);
        provider.images = Some(false);
        assert!(
            !model_info("gpt-4.1", Some(&provider)).images,
            "a provider that strips images overrides the catalog"
        );
    }

    /// The names a message lists between `"` quotes or backticks after `after`.
    fn listed(message: &str, after: &str) -> Vec<String> {
        let tail = message.rsplit(after).next().unwrap_or_default();
        tail.split(['"', '`'])
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    }

    #[test]
    fn every_wire_api_is_a_config_value_and_the_errors_list_exactly_the_registered_ones() {
        let registered: Vec<String> = Api::names().into_iter().map(String::from).collect();
        for api in Api::ALL {
            let text = format!(
                "[providers.local]\napi = \"{}\"\nbase_url = \"http://127.0.0.1:1\"\n",
                api.wire().name()
            );
            let file = parse(&text).unwrap();
            let config = file.providers.get("local");
            let settings = provider_settings(&Overrides::default(), "local", config, None).unwrap();
            assert_eq!(settings.api, api);
        }

        let (key, message) = parse("[providers.local]\napi = \"gemini\"\n").unwrap_err();
        assert_eq!(key.as_deref(), Some("providers.local.api"));
        assert_eq!(listed(&message, "expected one of"), registered, "{message}");

        let file = parse("[providers.local]\nbase_url = \"http://127.0.0.1:1\"\n").unwrap();
        let (key, message) = provider_settings(
            &Overrides::default(),
            "local",
            file.providers.get("local"),
            None,
        )
        .unwrap_err();
        assert_eq!(key, "providers.local.api");
        assert_eq!(listed(&message, "set it to"), registered, "{message}");
    }
}
