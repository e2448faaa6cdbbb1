//! Lifecycle hooks, compatible with Claude Code's: commands the user configures for an event
//! (a tool call about to run or done, a prompt submitted, the agent about to stop, a session
//! starting or ending, a compaction, a notification). Each gets the event as JSON on stdin
//! and answers with its exit code (0 go on, 2 block with stderr as the reason) or JSON on
//! stdout (`{"decision": "block"|"approve", "reason": …}`), read by `answer`. A hook that
//! fails or hangs is reported (`hook_error`) and counts as "go on"; it never stops the run.
//! A `PreToolUse` answer that cannot be read is reported too, and blocks the call.

mod answer;
pub mod config;
pub mod pins;
mod process;
pub mod trust;

use crate::protocol::event::AgentEvent;
use answer::{Answer, Printed};
pub use process::Runner;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SessionStart,
    SessionEnd,
    PreCompact,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
        HookEvent::Notification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the hook's matcher applies (to the tool name).
    fn has_matcher(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }

    /// Whether the stdout of a hook that exits 0 is context for the model.
    fn stdout_is_context(self) -> bool {
        matches!(self, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
    }
}

/// Where a hook was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookSource {
    /// `config.toml` (the user's).
    Config(PathBuf),
    /// A project's settings file (run only when the project is trusted).
    Project(PathBuf),
}

#[derive(Clone, Debug)]
pub struct HookSpec {
    pub event: HookEvent,
    /// As written (`bash|write`); `None` matches everything.
    pub matcher: Option<String>,
    pattern: Option<regex::Regex>,
    pub command: String,
    pub timeout: Duration,
    pub source: HookSource,
    /// Runs inside the command sandbox (the default; `sandbox = false` opts out).
    pub sandbox: bool,
    /// For a hook that runs outside the sandbox: the files its command names where
    /// sandboxed commands can write, as they were when it was loaded (`pins`). `None`
    /// until pinned.
    pub pins: Option<Vec<pins::Pin>>,
}

impl HookSpec {
    /// `Err` when the matcher is not a regular expression.
    pub fn new(
        event: HookEvent,
        matcher: Option<String>,
        command: String,
        timeout: Duration,
        source: HookSource,
    ) -> Result<HookSpec, String> {
        let matcher = matcher.filter(|m| !m.trim().is_empty() && m.trim() != "*");
        // Tool names are matched whole and without regard to case, so Claude Code's
        // `Bash` or `Edit|Write` match this agent's `bash`, `edit` and `write`.
        let pattern = match &matcher {
            Some(m) => Some(
                regex::RegexBuilder::new(&format!("^(?:{})$", m.trim()))
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| format!("`{m}` is not a regular expression: {e}"))?,
            ),
            None => None,
        };
        Ok(HookSpec {
            event,
            matcher,
            pattern,
            command,
            timeout,
            source,
            sandbox: true,
            pins: None,
        })
    }

    /// The same hook, run outside the command sandbox.
    pub fn unsandboxed(self) -> HookSpec {
        HookSpec {
            sandbox: false,
            ..self
        }
    }

    /// Pin what an unsandboxed hook runs (once; a sandboxed one needs no pins).
    pub fn pin(&mut self, cwd: &Path, project: &Path) {
        if !self.sandbox && self.pins.is_none() {
            self.pins = Some(pins::pin(&self.command, cwd, project));
        }
    }

    fn matches(&self, subject: Option<&str>) -> bool {
        match (&self.pattern, subject) {
            (Some(pattern), Some(subject)) if self.event.has_matcher() => pattern.is_match(subject),
            _ => true,
        }
    }
}

/// What the hooks of one event said, together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookVerdict {
    /// A hook blocked: its reason (several: joined by newlines).
    pub block: Option<String>,
    /// A hook approved (a tool call: its permission question is skipped).
    pub approve: bool,
    /// What hooks added as context (UserPromptSubmit, SessionStart).
    pub context: Vec<String>,
}

/// The configured hooks, and where they run.
#[derive(Debug, Default)]
pub struct Hooks {
    specs: RwLock<Vec<HookSpec>>,
    cwd: PathBuf,
    /// The project root, given to hooks as `AGENT_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR`).
    project_dir: PathBuf,
}

impl Hooks {
    /// The hooks `specs`, run in `cwd`; what unsandboxed ones run is pinned now (a
    /// project's hooks were pinned when loaded, with what the user trusted).
    pub fn new(specs: Vec<HookSpec>, cwd: &Path) -> Hooks {
        let hooks = Hooks {
            specs: RwLock::new(Vec::new()),
            cwd: cwd.to_path_buf(),
            project_dir: crate::extensions::sources::project_root(cwd),
        };
        hooks.add(specs);
        hooks
    }

    /// Add hooks (a project's, once the user trusted it).
    pub fn add(&self, mut specs: Vec<HookSpec>) {
        for spec in &mut specs {
            spec.pin(&self.cwd, &self.project_dir);
        }
        self.specs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(specs);
    }

    /// The hooks for `event` that match `subject` (the tool name).
    fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<HookSpec> {
        self.specs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|s| s.event == event && s.matches(subject))
            .cloned()
            .collect()
    }

    pub fn has(&self, event: HookEvent) -> bool {
        self.specs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|s| s.event == event)
    }

    /// Run the hooks of `event` matching `subject` (at the same time, as `runner` says),
    /// each with `input` plus `hook_event_name` and `cwd` on stdin; `emit` reports
    /// `hook_start`, `hook_end` and `hook_error`. Cancelling kills them (and they count as
    /// having said nothing).
    pub async fn run(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        mut input: Map<String, Value>,
        runner: &Runner,
        cancel: &CancellationToken,
        emit: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> HookVerdict {
        let specs = self.matching(event, subject);
        if specs.is_empty() {
            return HookVerdict::default();
        }
        input.insert("hook_event_name".into(), json!(event.as_str()));
        input.insert("cwd".into(), json!(self.cwd.display().to_string()));
        let stdin = serde_json::to_vec(&Value::Object(input)).unwrap_or_default();
        let runs = specs
            .iter()
            .map(|spec| self.run_one(spec, stdin.clone(), runner, cancel, emit));
        let answers = futures_util::future::join_all(runs).await;
        let mut verdict = HookVerdict::default();
        let mut reasons = Vec::new();
        for answer in answers.into_iter().flatten() {
            match answer {
                Answer::Continue(context) => verdict.context.extend(context),
                Answer::Block(reason) => reasons.push(reason),
                Answer::Approve(context) => {
                    verdict.approve = true;
                    verdict.context.extend(context);
                }
            }
        }
        if !reasons.is_empty() {
            verdict.block = Some(reasons.join("\n"));
            verdict.approve = false;
        }
        verdict
    }

    /// One hook; `None` when it failed (reported) or was cancelled.
    async fn run_one(
        &self,
        spec: &HookSpec,
        stdin: Vec<u8>,
        runner: &Runner,
        cancel: &CancellationToken,
        emit: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Option<Answer> {
        let name = spec.event.as_str().to_string();
        emit(AgentEvent::HookStart {
            hook_event_name: name.clone(),
            command: spec.command.clone(),
        });
        let started = Instant::now();
        let env = [
            ("AGENT_PROJECT_DIR", self.project_dir.as_path()),
            ("CLAUDE_PROJECT_DIR", self.project_dir.as_path()),
        ];
        let error = |message: String| {
            tracing::warn!(event = %name, command = %spec.command, %message, "hook failed");
            emit(AgentEvent::HookError {
                hook_event_name: name.clone(),
                command: spec.command.clone(),
                message,
            });
        };
        if let Some(refusal) = refuse_changed(spec, runner) {
            error(refusal.clone());
            // A guard whose code was swapped must not wave the call through.
            return (spec.event == HookEvent::PreToolUse).then_some(Answer::Block(refusal));
        }
        let hook = process::Run {
            command: &spec.command,
            cwd: &self.cwd,
            env: &env,
            input: stdin,
            timeout: spec.timeout,
            sandboxed: spec.sandbox,
        };
        let result = process::run(hook, runner, cancel).await;
        let finished = match result {
            Ok(finished) => finished,
            Err(process::HookRunError::Cancelled) => return None,
            Err(e) => {
                error(e.to_string());
                return None;
            }
        };
        let reading = answer::read(
            spec.event,
            &Printed {
                code: finished.code,
                stdout: &finished.stdout,
                stdout_cut: finished.stdout_cut,
                stderr: &finished.stderr,
                command: &spec.command,
            },
        );
        if let Some(problem) = reading.problem {
            error(problem);
            // An unreadable answer that still decides (a PreToolUse block) counts.
            return reading.answer;
        }
        let answer = reading.answer?;
        let (decision, reason) = match &answer {
            Answer::Continue(_) => ("continue", None),
            Answer::Block(reason) => ("block", Some(reason.clone())),
            Answer::Approve(_) => ("approve", None),
        };
        emit(AgentEvent::HookEnd {
            hook_event_name: name,
            command: spec.command.clone(),
            exit_code: finished.code,
            decision: decision.to_string(),
            reason,
            duration_ms: crate::time::millis(started.elapsed()),
        });
        Some(answer)
    }
}

/// Why an unsandboxed hook must not run now: a file its command names changed since it was
/// pinned, while the agent's commands run sandboxed (and so could be who changed it).
fn refuse_changed(spec: &HookSpec, runner: &Runner) -> Option<String> {
    if spec.sandbox || runner.sandbox.status == crate::sandbox::Status::Off {
        return None;
    }
    let changed = pins::changed(spec.pins.as_deref()?)?;
    let since = match spec.source {
        HookSource::Project(_) => "you trusted this project's hooks",
        HookSource::Config(_) => "the agent started",
    };
    Some(format!(
        "not run: it runs outside the sandbox (`sandbox = false`) and {} changed since {since}, \
         possibly by a sandboxed command; check the file, then restart the agent (a project's \
         hooks are asked about again)",
        changed.display()
    ))
}
