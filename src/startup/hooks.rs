//! The hooks an engine runs: the user's from `config.toml`, and the project's only once the
//! user trusted them as they are now; what a front end that cannot ask says about the rest.

use crate::config::Settings;
use crate::extensions::hooks::Hooks;
use crate::extensions::hooks::trust::{ProjectHooks, Trust, TrustStore};
use std::sync::Arc;

/// The project's hooks when the user was never asked about them (or they changed since).
pub fn untrusted_project_hooks(settings: &Settings) -> Option<ProjectHooks> {
    let project = settings.project_hooks.as_ref()?;
    let unknown = !project.specs.is_empty()
        && TrustStore::in_home(&settings.paths.home).status(project) == Trust::Unknown;
    unknown.then(|| project.clone())
}

/// What a front end that cannot ask says about a project's hooks it does not run.
pub fn untrusted_hooks_notice(project: &ProjectHooks) -> String {
    let files: Vec<String> = project
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    format!(
        "the project's hooks ({}) are not run: this project is not trusted yet — start `agent` in it interactively to review and trust them",
        files.join(", ")
    )
}

/// The hooks an agent runs: the user's from `config.toml`, and the project's when the user
/// trusted them (as they are now).
pub fn hooks_for(settings: &Settings) -> Arc<Hooks> {
    let mut specs = settings.hooks.clone();
    if let Some(project) = &settings.project_hooks
        && TrustStore::in_home(&settings.paths.home).status(project) == Trust::Trusted
    {
        specs.extend(project.specs.iter().cloned());
    }
    Arc::new(Hooks::new(specs, &settings.cwd))
}
