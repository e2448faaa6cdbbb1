//! The model of a session opened at start-up: a resumed one goes on with the model and
//! reasoning level it last used unless the command line chose them, and the outcome is
//! noted in its file. (A session resumed later, by the engine's `Resume`, is settled by the
//! engine itself.)

use crate::agent::commands::session::record_model;
use crate::config::Settings;
use crate::session::Opened;

/// Settle the model of an opened session: a resumed one keeps the model and reasoning level
/// it last used unless the command line chose them (`thinking_from_flags` for the level);
/// the outcome is noted in the session when it changed. Returns notices for the user.
pub async fn adopt_session_model(
    settings: &mut Settings,
    opened: &Opened,
    thinking_from_flags: bool,
) -> Result<Vec<String>, String> {
    let mut notices = Vec::new();
    if !settings.model_from_flags
        && let Some((provider, model)) = &opened.model
        && (provider != &settings.provider.name || model != &settings.model.id)
    {
        match settings.resolve_model(provider, model) {
            Ok((provider_settings, model_info)) => {
                settings.provider = provider_settings;
                settings.model = model_info;
            }
            Err(e) => notices.push(format!(
                "the session used {provider}/{model}, which is not available ({e}); using {}/{}",
                settings.provider.name, settings.model.id
            )),
        }
    }
    if !thinking_from_flags && let Some(thinking) = opened.thinking {
        settings.thinking = thinking;
    }
    // A long session opened from its end (`session::cold`) may say its model and level
    // only in the part not read yet: the engine adopts them when it is found, and nothing
    // is noted before.
    let pending = opened.cold.as_ref().filter(|part| !part.is_found());
    let model_later = pending.is_some() && opened.model.is_none();
    let thinking_later = pending.is_some() && opened.thinking.is_none();
    if let Some(part) = pending {
        part.adopt(
            model_later && !settings.model_from_flags,
            thinking_later && !thinking_from_flags,
        );
    }
    if let Some(writer) = &opened.writer
        && !model_later
        && !thinking_later
    {
        let current = (settings.provider.name.clone(), settings.model.id.clone());
        record_model(
            writer,
            &current,
            settings.thinking,
            opened.model.as_ref(),
            opened.thinking,
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    Ok(notices)
}
