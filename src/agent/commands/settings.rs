//! The settings commands: the model (`SetModel`, by the one reading of `provider/model`, or
//! `CycleModel` through the available ones) and the thinking level. A change takes effect
//! at once and is announced with `config_changed` (`Shared::config_changed`, also sent for
//! the permission mode); noting it in the session is what a caller may stop waiting for.

use super::models::{self, Models};
use crate::agent::Agent;
use crate::agent::state::{RunSettings, Shared, State, lock};
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;
use crate::llm::request::ThinkingLevel;
use crate::protocol::command::ModelRef;
use crate::protocol::event::AgentEvent;
use crate::protocol::outcome::{CommandError, ModelSummary, Outcome};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Shared {
    /// Announce the model, thinking level and permission mode now (`config_changed`).
    pub fn config_changed(&self) {
        let settings = self.settings();
        let permission_mode = lock(&self.state).permissions.mode;
        self.emit(AgentEvent::ConfigChanged {
            provider: settings.provider.settings().name.clone(),
            model: settings.model.id.clone(),
            thinking_level: settings.thinking,
            permission_mode,
            profile: settings.profile.clone(),
        });
    }
}

impl Agent {
    /// Change the run settings (with the state at hand) as `change` says, from the next
    /// model call on, and announce them.
    pub(crate) fn change_settings(&self, change: impl FnOnce(&mut RunSettings, &mut State)) {
        {
            let mut state = lock(&self.shared.state);
            let mut settings = lock(&self.shared.settings);
            let mut next = RunSettings::clone(&settings);
            change(&mut next, &mut state);
            *settings = Arc::new(next);
        }
        self.shared.config_changed();
    }

    /// The models a user could switch to (`cycle_model` goes through them in this order);
    /// empty when no model can be chosen by name.
    pub fn available_models(&self) -> Vec<ModelSummary> {
        let Some(models) = self.shared.models.as_deref() else {
            return Vec::new();
        };
        let state = self.snapshot();
        models
            .available((&state.provider, &state.model))
            .iter()
            .map(|(provider, model)| models::summary(provider, model))
            .collect()
    }

    pub(super) fn models(&self) -> Result<&dyn Models, CommandError> {
        self.shared
            .models
            .as_deref()
            .ok_or_else(|| CommandError::Model("models cannot be chosen here".to_string()))
    }

    /// `SetModel`.
    pub(super) async fn choose_model(
        &self,
        model: &ModelRef,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        let models = self.models()?;
        let current = self.shared.settings().provider.settings().name.clone();
        let (mut provider, info) =
            models::resolve(model, &current, models).map_err(CommandError::Model)?;
        self.keep_account(models, &mut provider);
        self.switch_model(models, provider, info, cancel).await
    }

    /// `CycleModel`: the next of the available models after the one in use.
    pub(super) async fn cycle_model(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        let models = self.models()?;
        let state = self.snapshot();
        let available = models.available((&state.provider, &state.model));
        if available.len() < 2 {
            return Ok(Outcome::NoOtherModel);
        }
        let current = available
            .iter()
            .position(|(provider, model)| {
                provider.name == state.provider && model.id == state.model
            })
            .unwrap_or(0);
        let Some((mut provider, info)) = available.into_iter().cycle().nth(current + 1) else {
            return Ok(Outcome::NoOtherModel);
        };
        self.keep_account(models, &mut provider);
        self.switch_model(models, provider, info, cancel).await
    }

    /// The account a model switch keeps: the active profile's for its provider (another
    /// provider's model is called with that provider's default account).
    fn keep_account(&self, models: &dyn Models, provider: &mut ProviderSettings) {
        let profile = self.shared.settings().profile.clone();
        provider.account = models.account(profile.as_deref(), &provider.name);
    }

    async fn switch_model(
        &self,
        models: &dyn Models,
        provider: ProviderSettings,
        info: ModelInfo,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        let summary = models::summary(&provider, &info);
        let client = models.connect(provider).map_err(CommandError::Model)?;
        let noted = self.set_model(client, info);
        tokio::select! {
            () = noted => {}
            () = cancel.cancelled() => {}
        }
        Ok(Outcome::Model {
            model: summary,
            thinking: self.shared.settings().thinking,
        })
    }

    /// `SetThinking`: the level, as far as the model offers it (a model that does not
    /// reason stays `off`); noted in the session when it changed.
    pub(super) async fn choose_thinking(
        &self,
        wanted: ThinkingLevel,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        let level = if self.thinking_levels().contains(&wanted) {
            wanted
        } else {
            ThinkingLevel::Off
        };
        if self.shared.settings().thinking != level {
            let noted = self.set_thinking_now(level);
            tokio::select! {
                () = noted => {}
                () = cancel.cancelled() => {}
            }
        }
        Ok(Outcome::Thinking { level })
    }

    /// `CycleThinking`: the next level the model offers after the current one (wrapping
    /// around to `off`).
    pub(super) async fn cycle_thinking(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        let levels = self.thinking_levels();
        if levels.len() < 2 {
            return Ok(Outcome::NoOtherLevel);
        }
        let current = self.shared.settings().thinking;
        let next = levels
            .iter()
            .position(|level| *level == current)
            .and_then(|at| levels.get((at + 1) % levels.len()))
            .copied()
            .unwrap_or(ThinkingLevel::Off);
        self.choose_thinking(next, cancel).await
    }
}
