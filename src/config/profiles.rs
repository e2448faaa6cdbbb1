//! `[profiles.NAME]`: a named set of provider, model, account (which stored credential),
//! permission mode, sandbox mode and MCP servers, chosen with `--profile NAME` (or the
//! file's `profile`) at start and switched between runs with `/profile NAME` (the engine's
//! `SetProfile`). What a profile leaves out keeps the value below it.
//!
//! The provider and model come from layers, highest first (at start: the command line, the
//! profile, the file; when switching: the profile, then what the session started with).
//! The provider is the highest one set; a layer's model is used when that layer is not
//! below the one that chose the provider, or when it names that same provider itself — a
//! model belongs to its provider, so a profile that changes the provider without naming a
//! model gets that provider's default, never another provider's model.

use crate::sandbox::SandboxMode;
use crate::tools::permission::PermissionMode;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProfileTable {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The stored credential of the provider (`agent login --provider P --account A`);
    /// none: the provider's default one.
    pub account: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub sandbox: Option<SandboxMode>,
    /// The `[mcp_servers]` this profile uses, by name; none: all of them.
    pub mcp_servers: Option<Vec<String>>,
}

/// One layer's provider and model.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layer<'a> {
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
}

/// The provider (`default_provider` when no layer sets one), the index of the layer that
/// chose it (`layers.len()` for the default), and the model the layers give it, if any.
pub fn pick<'a>(
    layers: &[Layer<'a>],
    default_provider: &'a str,
) -> (&'a str, usize, Option<&'a str>) {
    let (chosen_at, provider) = layers
        .iter()
        .enumerate()
        .find_map(|(i, layer)| layer.provider.map(|p| (i, p)))
        .unwrap_or((layers.len(), default_provider));
    let model = layers.iter().enumerate().find_map(|(i, layer)| {
        let belongs = i <= chosen_at || layer.provider == Some(provider);
        layer.model.filter(|_| belongs)
    });
    (provider, chosen_at, model)
}

/// Check every profile against the rest of the file: its provider is known, its account
/// is a name an account can have, its MCP servers are configured. `(key, message)`.
pub fn check(
    profiles: &BTreeMap<String, ProfileTable>,
    knows_provider: impl Fn(&str) -> bool,
    known_providers: impl Fn() -> String,
    mcp_servers: &[&str],
) -> Result<(), (String, String)> {
    for (name, profile) in profiles {
        let key = |field: &str| format!("profiles.{name}.{field}");
        if let Some(provider) = &profile.provider
            && !knows_provider(provider)
        {
            return Err((
                key("provider"),
                format!("unknown provider `{provider}` ({})", known_providers()),
            ));
        }
        if let Some(account) = &profile.account {
            crate::auth::store::check_account(account).map_err(|why| (key("account"), why))?;
        }
        for (i, server) in profile.mcp_servers.iter().flatten().enumerate() {
            if !mcp_servers.contains(&server.as_str()) {
                let known = if mcp_servers.is_empty() {
                    "none is configured".to_string()
                } else {
                    format!("configured: {}", mcp_servers.join(", "))
                };
                return Err((
                    format!("profiles.{name}.mcp_servers[{i}]"),
                    format!("no MCP server `{server}` in [mcp_servers] ({known})"),
                ));
            }
        }
    }
    Ok(())
}

/// Why `name` is no profile of `profiles`, naming the ones there are.
pub fn unknown(name: &str, profiles: &BTreeMap<String, ProfileTable>) -> String {
    if profiles.is_empty() {
        format!("unknown profile `{name}`: none is configured ([profiles.NAME] in config.toml)")
    } else {
        let names: Vec<&str> = profiles.keys().map(String::as_str).collect();
        format!("unknown profile `{name}` (known: {})", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer<'a>(provider: Option<&'a str>, model: Option<&'a str>) -> Layer<'a> {
        Layer { provider, model }
    }

    #[test]
    fn a_model_stays_with_its_provider() {
        // The profile changes the provider and names no model: the file's model belongs
        // to the file's provider and is not used.
        let layers = [
            layer(None, None),
            layer(Some("anthropic"), None),
            layer(Some("openai"), Some("gpt-5")),
        ];
        assert_eq!(pick(&layers, "openai"), ("anthropic", 1, None));
        // A model on the command line goes with whatever provider was chosen.
        let layers = [
            layer(None, Some("m")),
            layer(Some("anthropic"), Some("claude")),
            layer(Some("openai"), None),
        ];
        assert_eq!(pick(&layers, "openai"), ("anthropic", 1, Some("m")));
        // The profile names only a model: it goes with the file's provider.
        let layers = [
            layer(None, None),
            layer(None, Some("fast")),
            layer(Some("local"), Some("slow")),
        ];
        assert_eq!(pick(&layers, "openai"), ("local", 2, Some("fast")));
        // A lower layer naming the same provider keeps its model.
        let layers = [
            layer(Some("openai"), None),
            layer(Some("openai"), Some("x")),
        ];
        assert_eq!(pick(&layers, "openai"), ("openai", 0, Some("x")));
        // The command line's provider beats the profile's, and the profile's model then
        // does not apply.
        let layers = [
            layer(Some("local"), None),
            layer(Some("anthropic"), Some("claude")),
        ];
        assert_eq!(pick(&layers, "openai"), ("local", 0, None));
        assert_eq!(pick(&[], "openai"), ("openai", 0, None));
    }

    #[test]
    fn profiles_are_checked_against_the_file() {
        let table = |text: &str| -> BTreeMap<String, ProfileTable> {
            let profile: ProfileTable = toml::from_str(text).unwrap();
            BTreeMap::from([("work".to_string(), profile)])
        };
        let known = |p: &str| p == "openai";
        let list = || "known: openai".to_string();
        assert!(check(&table("provider = \"openai\""), known, list, &[]).is_ok());
        let (key, message) = check(&table("provider = \"nope\""), known, list, &[]).unwrap_err();
        assert_eq!(key, "profiles.work.provider");
        assert!(message.contains("known: openai"), "{message}");
        let (key, _) = check(&table("account = \"a b\""), known, list, &[]).unwrap_err();
        assert_eq!(key, "profiles.work.account");
        let (key, message) = check(
            &table("mcp_servers = [\"files\", \"web\"]"),
            known,
            list,
            &["files"],
        )
        .unwrap_err();
        assert_eq!(key, "profiles.work.mcp_servers[1]");
        assert!(message.contains("configured: files"), "{message}");
        assert!(unknown("x", &BTreeMap::new()).contains("none is configured"));
        assert!(unknown("x", &table("")).contains("known: work"));
    }
}
