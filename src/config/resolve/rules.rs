//! The permission rules of `[permissions]` (each located at its line of the config file, for
//! `/permissions` and the messages that cite it) and the log level (`RUST_LOG`, `log_level`).

use super::FileErrors;
use crate::config::ConfigError;
use crate::config::file::FileConfig;
use crate::tools::permission::PermissionRules;
use crate::tools::rules::RuleSet;
use std::path::Path;

pub(super) fn permission_rules(
    file: &FileConfig,
    config_path: &Path,
    cwd: &Path,
    errors: &FileErrors<'_>,
) -> Result<PermissionRules, ConfigError> {
    let mut rules = RuleSet::parse(
        &file.permissions.allow,
        &file.permissions.ask,
        &file.permissions.deny,
        cwd,
    )
    .map_err(|e| errors.at(e.key, e.message))?;
    rules.locate(|kind, index| {
        file.rule_lines
            .line(kind, index)
            .map(|line| format!("{}:{line}", config_path.display()))
    });
    Ok(PermissionRules {
        rules,
        cwd: cwd.to_path_buf(),
    })
}

pub(super) fn log_level(file: &FileConfig, errors: &FileErrors<'_>) -> Result<String, ConfigError> {
    let log_level = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .or(file.log_level.clone())
        .unwrap_or_else(|| "info".to_string());
    if tracing_subscriber::EnvFilter::try_new(&log_level).is_err() {
        return Err(errors.at(
            "log_level",
            format!("`{log_level}` is not a log level or filter"),
        ));
    }
    Ok(log_level)
}
