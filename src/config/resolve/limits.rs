//! What bounds a run and how it recovers: limits (`--max-turns`, `[limits]`) and the loop
//! guard, the retry policy, compaction, checkpoints and sub-agents (`[agents]`).

use super::FileErrors;
use crate::agent::compaction::CompactionSettings;
use crate::agent::guard::GuardSettings;
use crate::agent::limits::{Limits, RetryPolicy};
use crate::cli::Cli;
use crate::config::file::{self, FileConfig, GuardConfig};
use crate::config::{AgentsConfig, ConfigError};
use std::time::Duration;

/// `--max-turns`, `--max-tool-calls`, `--timeout` over `[limits]`; 0 means unbounded.
pub(super) fn limits(
    cli: &Cli,
    file: &FileConfig,
    errors: &FileErrors<'_>,
) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    let limit = |flag: Option<u32>, file: Option<u32>, default: Option<u32>| match flag.or(file) {
        Some(0) => None,
        Some(n) => Some(n),
        None => default,
    };
    Ok(Limits {
        max_turns: limit(cli.max_turns, file.limits.max_turns, defaults.max_turns),
        max_tool_calls: limit(
            cli.max_tool_calls,
            file.limits.max_tool_calls,
            defaults.max_tool_calls,
        ),
        timeout: match cli.timeout.or(file.limits.timeout_secs) {
            Some(0) => None,
            Some(secs) => Some(Duration::from_secs(secs)),
            None => defaults.timeout,
        },
        loop_guard: loop_guard(&file.guard).map_err(errors.pair())?,
        budgets: crate::agent::budget::Budgets {
            run_usd: match cli.max_budget_usd {
                Some(usd) => budget_usd(Some(usd)).map_err(|message| ConfigError::Flag {
                    flag: "--max-budget-usd",
                    message,
                })?,
                None => budget_usd(file.limits.budget_usd)
                    .map_err(|m| errors.at("limits.budget_usd", m))?,
            },
            session_usd: budget_usd(file.limits.session_budget_usd)
                .map_err(|m| errors.at("limits.session_budget_usd", m))?,
            run_output_tokens: file.limits.max_output_tokens.filter(|n| *n > 0),
        },
    })
}

/// A dollar budget: positive and finite (0: none).
fn budget_usd(value: Option<f64>) -> Result<Option<f64>, String> {
    match value {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(usd) if usd.is_finite() && usd > 0.0 => Ok(Some(usd)),
        Some(usd) => Err(format!(
            "a budget is a positive number of US dollars, not {usd}"
        )),
    }
}

/// `[retry]`.
pub(super) fn retry(file: &FileConfig) -> RetryPolicy {
    let defaults = RetryPolicy::default();
    let ms =
        |value: Option<u64>, default: Duration| value.map(Duration::from_millis).unwrap_or(default);
    RetryPolicy {
        max_retries: file.retry.max_retries.unwrap_or(defaults.max_retries),
        initial_delay: ms(file.retry.initial_delay_ms, defaults.initial_delay),
        max_delay: ms(file.retry.max_delay_ms, defaults.max_delay),
        max_retry_delay: ms(file.retry.max_retry_delay_ms, defaults.max_retry_delay),
    }
}

/// `[compaction]`.
pub(super) fn compaction(file: &FileConfig) -> CompactionSettings {
    let defaults = CompactionSettings::default();
    let table = &file.compaction;
    CompactionSettings {
        enabled: table.enabled.unwrap_or(defaults.enabled),
        reserve_tokens: table.reserve_tokens.unwrap_or(defaults.reserve_tokens),
        keep_recent_tokens: table
            .keep_recent_tokens
            .unwrap_or(defaults.keep_recent_tokens),
    }
}

/// `[agents]`; `task_listed`: the tools the model may use include `task` (no tool list, or
/// one that names it; never with `--no-tools`).
pub(super) fn agents(
    table: &file::AgentsTable,
    task_listed: bool,
) -> Result<AgentsConfig, (&'static str, String)> {
    if table.max_parallel == Some(0) {
        return Err(("agents.max_parallel", "must be at least 1".to_string()));
    }
    Ok(AgentsConfig {
        enabled: table.enabled.unwrap_or(true) && task_listed,
        max_parallel: table.max_parallel.unwrap_or(4),
        max_depth: table.max_depth.unwrap_or(1),
    })
}

fn loop_guard(config: &GuardConfig) -> Result<GuardSettings, (&'static str, String)> {
    let defaults = GuardSettings::default();
    let repeat_threshold = config.repeat_threshold.unwrap_or(defaults.repeat_threshold);
    if repeat_threshold < 2 {
        return Err((
            "guard.repeat_threshold",
            "must be at least 2 (set guard.enabled = false to turn the guard off)".to_string(),
        ));
    }
    Ok(GuardSettings {
        enabled: config.enabled.unwrap_or(defaults.enabled),
        repeat_threshold,
    })
}

/// `[checkpoints]`.
pub(super) fn checkpoints(
    config: &file::CheckpointsConfig,
) -> Result<crate::checkpoint::Settings, (&'static str, String)> {
    let defaults = crate::checkpoint::Settings::default();
    let at_least_one = |key: &'static str, value: Option<u64>| match value {
        Some(0) => Err((key, "must be at least 1".to_string())),
        _ => Ok(()),
    };
    at_least_one("checkpoints.max_file_bytes", config.max_file_bytes)?;
    at_least_one(
        "checkpoints.max_files",
        config
            .max_files
            .map(|n| u64::try_from(n).unwrap_or(u64::MAX)),
    )?;
    at_least_one("checkpoints.keep_days", config.keep_days.map(u64::from))?;
    Ok(crate::checkpoint::Settings {
        enabled: config.enabled.unwrap_or(defaults.enabled),
        max_file_bytes: config.max_file_bytes.unwrap_or(defaults.max_file_bytes),
        max_files: config.max_files.unwrap_or(defaults.max_files),
        keep_days: config.keep_days.unwrap_or(defaults.keep_days),
        ..defaults
    })
}
