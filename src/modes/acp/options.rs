//! What an editor can switch in a session: the permission mode (ACP session modes `ask`,
//! `auto`, `read-only`, `plan`, also offered as a config option of category `mode`), the model (a
//! config option of category `model`: ACP 1 has no `session/set_model`) and the reasoning
//! level (category `thought_level`).

use crate::agent::Snapshot;
use crate::llm::request::ThinkingLevel;
use crate::protocol::outcome::ModelSummary;
use crate::tools::permission::PermissionMode;
use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use clap::ValueEnum;

pub const MODE: &str = "mode";
pub const MODEL: &str = "model";
pub const THINKING: &str = "thinking";

const MODES: [(PermissionMode, &str, &str); 4] = [
    (
        PermissionMode::Ask,
        "Ask",
        "Changing files and running commands need your approval",
    ),
    (
        PermissionMode::Auto,
        "Auto",
        "Everything runs without asking (deny and ask rules still apply)",
    ),
    (
        PermissionMode::ReadOnly,
        "Read only",
        "The agent only looks: changes and commands are refused",
    ),
    (
        PermissionMode::Plan,
        "Plan",
        "The agent only looks, then ends with a plan; switch to ask or auto to carry it out",
    ),
];

/// The permission mode an id names.
pub fn mode_of(id: &str) -> Option<PermissionMode> {
    MODES
        .iter()
        .map(|(mode, _, _)| *mode)
        .find(|mode| mode.as_str() == id)
}

pub fn modes(current: PermissionMode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        MODES
            .iter()
            .map(|(mode, name, about)| SessionMode::new(mode.as_str(), *name).description(*about))
            .collect(),
    )
}

/// The value id of a model choice.
pub fn model_value(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

/// Every option with its current value.
/// `models`: the engine's available models (`Agent::available_models`).
pub fn all(state: &Snapshot, models: &[ModelSummary]) -> Vec<SessionConfigOption> {
    let mode = SessionConfigOption::select(
        MODE,
        "Mode",
        state.permission_mode.as_str(),
        MODES
            .iter()
            .map(|(mode, name, about)| {
                SessionConfigSelectOption::new(mode.as_str(), *name).description(*about)
            })
            .collect::<Vec<_>>(),
    )
    .category(SessionConfigOptionCategory::Mode);
    let models = models
        .iter()
        .map(|choice| {
            let (provider, model) = (&choice.provider, &choice.id);
            SessionConfigSelectOption::new(
                model_value(provider, model),
                format!("{model} ({provider})"),
            )
        })
        .collect::<Vec<_>>();
    let model = SessionConfigOption::select(
        MODEL,
        "Model",
        model_value(&state.provider, &state.model),
        models,
    )
    .category(SessionConfigOptionCategory::Model);
    let thinking = SessionConfigOption::select(
        THINKING,
        "Thinking",
        state.thinking.as_str(),
        ThinkingLevel::value_variants()
            .iter()
            .map(|level| SessionConfigSelectOption::new(level.as_str(), level.as_str()))
            .collect::<Vec<_>>(),
    )
    .description("How much the model reasons before answering (models that reason)".to_string())
    .category(SessionConfigOptionCategory::ThoughtLevel);
    vec![mode, model, thinking]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_modes_and_levels_both_ways() {
        for (mode, _, _) in MODES {
            assert_eq!(mode_of(mode.as_str()), Some(mode));
        }
        assert_eq!(mode_of("yolo"), None);
        let state = modes(PermissionMode::ReadOnly);
        assert_eq!(state.current_mode_id.to_string(), "read-only");
        assert_eq!(state.available_modes.len(), 4);
    }
}
