//! Sessions as engine commands: starting a new one (`NewSession`) and continuing another
//! (`Resume`), with the model noted in the file the conversation goes on in
//! (`record_model`), the hooks of today's sequence (`/new` runs SessionEnd and SessionStart
//! `clear`; a resume runs none), and the old session closed off the async workers; below
//! them, switching the agent to another session and saving what the current file misses.
//! The session's identity itself lives in `Shared` (`session_identity`) and is announced
//! with `session_changed` by whatever changes it.

use super::models;
use crate::agent::history::History;
use crate::agent::state::lock;
use crate::agent::{Agent, AgentError};
use crate::llm::request::ThinkingLevel;
use crate::protocol::command::{ResumeModel, SessionRef};
use crate::protocol::message::Message;
use crate::protocol::outcome::{CommandError, Outcome, SessionChange};
use crate::session::format::NewEntry;
use crate::session::{self, Choice, Opened, SessionError, SessionWriter};
use crate::tools::spill::SpillDir;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Note the model and thinking level in the session when they differ from what it had.
pub async fn record_model(
    writer: &SessionWriter,
    current: &(String, String),
    thinking: ThinkingLevel,
    previous_model: Option<&(String, String)>,
    previous_thinking: Option<ThinkingLevel>,
) -> Result<(), SessionError> {
    if previous_model != Some(current) {
        writer
            .append(NewEntry::ModelChange {
                provider: &current.0,
                model: &current.1,
            })
            .await?;
    }
    let unchanged = previous_thinking == Some(thinking)
        || (previous_thinking.is_none() && thinking == ThinkingLevel::Off);
    if !unchanged {
        writer.append(NewEntry::ThinkingChange(thinking)).await?;
    }
    Ok(())
}

/// Close a session that was replaced — its writer syncs and joins its thread — on a
/// blocking thread; `cancel` cuts only the wait (the closing goes on).
pub(crate) async fn close_off_thread(
    previous: Option<Arc<SessionWriter>>,
    cancel: &CancellationToken,
) {
    if let Some(previous) = previous {
        let closing = crate::tasks::spawn_blocking(move || drop(previous));
        tokio::select! {
            _ = closing => {}
            () = cancel.cancelled() => {}
        }
    }
}

fn session_error(error: SessionError) -> CommandError {
    CommandError::Session(error.to_string())
}

fn not_changed() -> CommandError {
    CommandError::Cancelled("aborted: the session was not changed".to_string())
}

/// The model a resumed session goes on with, worked out before the switch.
struct Adopted {
    model: Option<models::Chosen>,
    thinking: Option<ThinkingLevel>,
}

impl Agent {
    /// Start over: an empty history written to `session` from now on. Only while idle.
    pub fn new_session(&self, session: Option<Arc<SessionWriter>>) -> Result<(), AgentError> {
        self.replace_session_as(session, Vec::new(), None, SessionChange::New)
            .map(drop)
    }

    /// Continue another conversation: its history, written to its session from now on.
    /// Only while idle.
    pub fn switch_session(
        &self,
        session: Option<Arc<SessionWriter>>,
        history: Vec<(String, Arc<Message>)>,
    ) -> Result<(), AgentError> {
        // Closing the old session syncs and joins its writer: not while holding the locks.
        self.replace_session_as(session, history, None, SessionChange::Resume)
            .map(drop)
    }

    /// `switch_session`, handing back the previous session instead of closing it. Closing
    /// waits for its writer to sync, so a front end that must stay responsive closes it
    /// on a blocking thread. Only while idle, and not while the current session file is
    /// missing messages (`save_session` first): they would be lost.
    pub fn replace_session(
        &self,
        session: Option<Arc<SessionWriter>>,
        history: Vec<(String, Arc<Message>)>,
    ) -> Result<Option<Arc<SessionWriter>>, AgentError> {
        let change = if history.is_empty() {
            SessionChange::New
        } else {
            SessionChange::Resume
        };
        self.replace_session_as(session, history, None, change)
    }

    /// `replace_session` for session `id` (a session not kept on disk has no writer to say
    /// it; `None`: a new id), announced as `change` (`session_changed`).
    pub(crate) fn replace_session_as(
        &self,
        session: Option<Arc<SessionWriter>>,
        history: Vec<(String, Arc<Message>)>,
        id: Option<String>,
        change: SessionChange,
    ) -> Result<Option<Arc<SessionWriter>>, AgentError> {
        self.replace_session_with_cold(session, history, None, id, change)
    }

    /// `replace_session_as` for a session opened lazily: `cold` is the older part of its
    /// context, not read (`session::cold`); its usage is counted, and what only it says
    /// taken on, after the switch (`usage::count_cold`).
    pub(crate) fn replace_session_with_cold(
        &self,
        session: Option<Arc<SessionWriter>>,
        history: Vec<(String, Arc<Message>)>,
        cold: Option<crate::session::cold::ColdPart>,
        id: Option<String>,
        change: SessionChange,
    ) -> Result<Option<Arc<SessionWriter>>, AgentError> {
        let previous = {
            let mut state = lock(&self.shared.state);
            if state.running {
                return Err(AgentError::Busy);
            }
            if let Some(error) = &state.session_error {
                return Err(AgentError::Unsaved(error.clone()));
            }
            let ledger = crate::agent::usage::UsageLedger::from_history(&history);
            state.history = History::with_cold(cold.clone(), history);
            // Another conversation: the model has seen none of its files yet.
            state.files = Default::default();
            state.spill = Arc::new(SpillDir::for_session(session.as_ref().map(|s| s.path())));
            state.session_error = None;
            self.shared
                .purse
                .set_session_spent(ledger.total().cost.total);
            state.ledger = ledger;
            state.session_name = session.as_ref().and_then(|s| s.name());
            let goal = session.as_ref().and_then(|s| s.goal());
            if std::mem::replace(&mut state.goal, goal) != state.goal {
                self.shared
                    .goal_changed(&state, crate::protocol::event::GoalChange::Session);
            }
            let id = session
                .as_ref()
                .map(|s| s.id().to_string())
                .or(id)
                .unwrap_or_else(crate::session::new_id);
            if let Some(checkpoints) = &self.shared.checkpoints {
                // Each session has its own checkpoints (one not on disk, new ones).
                checkpoints.switch_session(&id);
            }
            *lock(&self.shared.session_id) = id;
            std::mem::replace(&mut *lock(&self.shared.session), session)
        };
        // The session the engine was built with is left: its older part is not counted.
        lock(&self.shared.uncounted).take();
        if let Some(cold) = cold {
            crate::agent::usage::count_cold(cold, &self.shared);
        }
        self.shared.session_changed(change);
        Ok(previous)
    }

    /// Write what the session file is missing after a failed write (it is also written
    /// with the next message); `Err` with why when it still cannot be written.
    pub async fn save_session(&self) -> Result<(), AgentError> {
        self.shared.sync_session().await;
        match self.shared.unsaved() {
            Some(error) => Err(AgentError::Unsaved(error)),
            None => Ok(()),
        }
    }

    /// Open `choice` in the working directory's sessions.
    async fn open_session(&self, choice: Choice) -> Result<Opened, CommandError> {
        let cwd = self.shared.settings().cwd.clone();
        let root = match (&choice, &self.shared.sessions_dir) {
            (_, Some(root)) => root.clone(),
            (Choice::Ephemeral | Choice::Path(_), None) => Path::new("").to_path_buf(),
            (_, None) => {
                return Err(CommandError::Session(
                    "sessions cannot be created or found here: this agent has no sessions directory"
                        .to_string(),
                ));
            }
        };
        // Lazily: a long never-compacted session's older part stays in its file
        // (`session::cold`) until something needs it.
        session::open_lazy(choice, &root, &cwd)
            .await
            .map_err(session_error)
    }

    /// `NewSession`: start over in a new session — kept on disk unless the current one is
    /// not — noting the current model in it. Only while idle.
    pub(super) async fn start_new_session(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        if self.is_running() {
            return Err(CommandError::RunActive);
        }
        // Messages the current file is missing are written now, or the switch is refused.
        self.save_session().await?;
        self.session_end("clear").await;
        let choice = if self.shared.session().is_some() {
            Choice::New
        } else {
            Choice::Ephemeral
        };
        let prepare = async {
            let opened = self.open_session(choice).await?;
            if let Some(writer) = &opened.writer {
                let state = self.snapshot();
                record_model(
                    writer,
                    &(state.provider, state.model),
                    state.thinking,
                    None,
                    None,
                )
                .await
                .map_err(session_error)?;
            }
            Ok::<_, CommandError>(opened)
        };
        let opened = tokio::select! {
            opened = prepare => opened?,
            () = cancel.cancelled() => return Err(not_changed()),
        };
        let notices = opened.notices;
        let previous = self.replace_session_as(
            opened.writer,
            Vec::new(),
            Some(opened.id),
            SessionChange::New,
        )?;
        self.session_start("clear").await;
        close_off_thread(previous, cancel).await;
        Ok(Outcome::Session {
            session: self.shared.session_identity(),
            notices,
        })
    }

    /// `Resume`: continue another session, with the current model (noted in its file) or
    /// the one it last used. Only while idle.
    pub(super) async fn resume_session(
        &self,
        target: SessionRef,
        model: ResumeModel,
        cancel: &CancellationToken,
    ) -> Result<Outcome, CommandError> {
        if self.is_running() {
            return Err(CommandError::RunActive);
        }
        self.save_session().await?;
        let choice = match target {
            SessionRef::IdPrefix { id } => Choice::Resume(id),
            SessionRef::Path { path } => Choice::Path(path),
        };
        let prepare = async {
            let opened = self.open_session(choice).await?;
            let mut notices = opened.notices.clone();
            let adopted = match model {
                ResumeModel::KeepCurrent => Adopted {
                    model: None,
                    thinking: None,
                },
                ResumeModel::AdoptSession => self.adoptable(&opened, &mut notices),
            };
            // A long session opened from its end may say its model and level only in the
            // part not read yet: taken on when it is found (`usage::adopt_older`), and
            // nothing is noted before.
            let pending = opened.cold.as_ref().filter(|part| !part.is_found());
            let model_later = pending.is_some() && opened.model.is_none();
            let thinking_later = pending.is_some() && opened.thinking.is_none();
            if let Some(part) = pending {
                let adopting = matches!(model, ResumeModel::AdoptSession);
                part.adopt(model_later && adopting, thinking_later && adopting);
            }
            if let Some(writer) = &opened.writer
                && !model_later
                && !thinking_later
            {
                let state = self.snapshot();
                let current = match &adopted.model {
                    Some((provider, info)) => (provider.settings().name.clone(), info.id.clone()),
                    None => (state.provider, state.model),
                };
                let thinking = adopted.thinking.unwrap_or(state.thinking);
                record_model(
                    writer,
                    &current,
                    thinking,
                    opened.model.as_ref(),
                    opened.thinking,
                )
                .await
                .map_err(session_error)?;
            }
            Ok::<_, CommandError>((opened, adopted, notices))
        };
        let (opened, adopted, notices) = tokio::select! {
            prepared = prepare => prepared?,
            () = cancel.cancelled() => return Err(not_changed()),
        };
        let previous = self.replace_session_with_cold(
            opened.writer,
            opened.history,
            opened.cold,
            Some(opened.id),
            SessionChange::Resume,
        )?;
        if adopted.model.is_some() || adopted.thinking.is_some() {
            self.adopt(adopted);
        }
        close_off_thread(previous, cancel).await;
        Ok(Outcome::Session {
            session: self.shared.session_identity(),
            notices,
        })
    }

    /// The model and thinking level `opened` last used, where they differ from the current
    /// ones and can be used; a model that cannot is a notice and the current one stays.
    fn adoptable(&self, opened: &Opened, notices: &mut Vec<String>) -> Adopted {
        let state = self.snapshot();
        let mut adopted = Adopted {
            model: None,
            thinking: opened.thinking.filter(|t| *t != state.thinking),
        };
        if let Some((provider, model)) = &opened.model
            && (provider != &state.provider || model != &state.model)
        {
            let chosen = match self.shared.models.as_deref() {
                Some(models) => models
                    .resolve(provider, model)
                    .and_then(|(settings, info)| Ok((models.connect(settings)?, info))),
                None => Err("models cannot be chosen here".to_string()),
            };
            match chosen {
                Ok(chosen) => adopted.model = Some(chosen),
                Err(e) => notices.push(format!(
                    "the session used {provider}/{model}, which is not available ({e}); using {}/{}",
                    state.provider, state.model
                )),
            }
        }
        adopted
    }

    /// Use what a resumed session last used (already noted in its file).
    fn adopt(&self, adopted: Adopted) {
        self.change_settings(|settings, state| {
            // The user's choice now, also after a run with a command's own model.
            state.model_after_run = None;
            if let Some((provider, model)) = adopted.model {
                settings.provider = provider;
                settings.model = model;
            }
            if let Some(thinking) = adopted.thinking {
                settings.thinking = thinking;
            }
        });
    }
}
