//! `SetProfile`: switching to a configured profile between runs — its provider and model
//! (with the profile's account, the stored credential requests use), permission mode,
//! sandbox and MCP servers, all at once and announced with one `config_changed`. What a
//! profile sets is the configuration's business (`Models::profile`, over `[profiles]`); the
//! engine only applies it. The new model is noted in the session as `SetModel` notes it.

use super::models;
use crate::agent::Agent;
use crate::agent::state::lock;
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;
use crate::protocol::outcome::{CommandError, Outcome, ProfileSummary};
use crate::sandbox::Sandbox;
use crate::tools::ToolSettings;
use crate::tools::permission::PermissionMode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What switching to a profile sets.
pub struct ProfileSettings {
    pub name: String,
    pub provider: ProviderSettings,
    pub model: ModelInfo,
    pub permission_mode: PermissionMode,
    /// The sandbox commands run in under this profile (found at start).
    pub sandbox: Sandbox,
    /// The MCP servers whose tools are offered (`None`: all).
    pub mcp_servers: Option<Vec<String>>,
}

impl Agent {
    /// `SetProfile`.
    pub(super) async fn switch_profile(
        &self,
        name: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        // A run keeps the settings it started with: switching under it would change its
        // sandbox between two commands.
        if lock(&self.shared.state).running {
            return Err(CommandError::RunActive);
        }
        let models = self.models()?;
        let profile = models.profile(name.trim()).map_err(CommandError::Model)?;
        let client = models
            .connect(profile.provider.clone())
            .map_err(CommandError::Model)?;
        let summary = Box::new(ProfileSummary {
            name: profile.name.clone(),
            model: models::summary(&profile.provider, &profile.model),
            account: profile.provider.account.clone(),
            permission_mode: profile.permission_mode,
            sandbox: profile.sandbox.mode.as_str().to_string(),
            mcp_servers: profile.mcp_servers.clone(),
        });
        let before = self.shared.settings();
        let model_changed = before.provider.settings().name != profile.provider.name
            || before.model.id != profile.model.id;
        if let Some(source) = &before.tool_source {
            source.select(profile.mcp_servers.as_deref());
        }
        let ProfileSettings {
            name,
            model,
            permission_mode,
            sandbox,
            ..
        } = profile;
        let (provider_name, model_id) = (client.settings().name.clone(), model.id.clone());
        self.change_settings(move |settings, state| {
            state.model_after_run = None;
            state.permissions.mode = permission_mode;
            state.permissions.set_sandbox(sandbox.status.clone());
            settings.provider = client;
            settings.model = model;
            settings.tool_settings = Arc::new(ToolSettings {
                sandbox,
                ..ToolSettings::clone(&settings.tool_settings)
            });
            // The offered tools are rebuilt before the next request (the MCP servers).
            settings.source_generation = None;
            settings.profile = Some(name);
        });
        if model_changed {
            let noted = self
                .shared
                .persist(crate::session::format::NewEntry::ModelChange {
                    provider: &provider_name,
                    model: &model_id,
                });
            tokio::select! {
                _ = noted => {}
                () = cancel.cancelled() => {}
            }
        }
        Ok(Outcome::Profile { profile: summary })
    }

    /// The profiles that can be switched to (`SetProfile`), by name.
    pub fn profiles(&self) -> Vec<String> {
        self.shared
            .models
            .as_deref()
            .map(|models| models.profiles())
            .unwrap_or_default()
    }
}
