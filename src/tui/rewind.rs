//! Time travel in the interface: what a checkpoint did not cover (said once, when it
//! changes), `/rewind` (and esc esc on an empty composer), `/fork` and `/tree`. The lists
//! are `Menu`s; what is chosen is the engine's `Rewind`, `UndoRewind`, `Fork` or
//! `SwitchBranch` (`engine::After` shows the result); the tree is read in a task that
//! reports back as `TaskResult::Tree`.

use super::app::{App, TaskResult};
use super::engine::After;
use super::views::menu::{Choice, Menu, MenuItem};
use crate::agent::rewind::RestoreMode;
use crate::protocol::command::{Command, RewindTarget};
use crate::protocol::event::SkippedFile;
use crate::protocol::message::Message;
use crate::protocol::outcome::RestoreSummary;
use crate::session::tree::SessionTree;

impl App {
    /// A checkpoint was taken: say what it does not cover, when that changed since the
    /// last one (every mutating call takes one; the same list again is no news).
    pub fn on_checkpoint(&mut self, skipped: &[SkippedFile]) {
        if skipped == self.run.checkpoint_skipped.as_slice() {
            return;
        }
        self.run.checkpoint_skipped = skipped.to_vec();
        if skipped.is_empty() {
            return;
        }
        const SHOWN: usize = 3;
        let mut text = format!(
            "Checkpoint: {} path(s) not covered, a rewind cannot restore them: ",
            skipped.len()
        );
        let listed: Vec<String> = skipped
            .iter()
            .take(SHOWN)
            .map(|s| format!("{} ({})", s.path, s.reason))
            .collect();
        text.push_str(&listed.join("; "));
        if skipped.len() > SHOWN {
            text.push_str(&format!("; and {} more", skipped.len() - SHOWN));
        }
        self.warning(&text);
    }

    /// The user messages of the conversation, newest first: `(entry id, one-line text)`.
    fn user_messages(&self) -> Vec<(String, String)> {
        self.agent
            .message_entries()
            .into_iter()
            .rev()
            .filter(|(id, _)| !id.is_empty())
            .filter_map(|(id, message)| match message.as_ref() {
                Message::User(user) => Some((id, one_line(user.typed_text()))),
                _ => None,
            })
            .collect()
    }

    /// `/rewind`, esc esc: pick a user message to go back to (or undo the last rewind).
    pub fn open_rewind(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let mut items = Vec::new();
        if self.agent.can_undo_rewind() {
            items.push(MenuItem::new(
                "↶ Undo last rewind",
                Choice::UndoRewind { force: false },
            ));
        }
        for (entry, text) in self.user_messages() {
            items.push(MenuItem::new(
                text.clone(),
                Choice::RewindTo {
                    entry,
                    preview: text,
                },
            ));
        }
        if items.is_empty() {
            return self.notice("Nothing to rewind to: no message has been sent yet.");
        }
        self.views
            .push(Box::new(Menu::new("Rewind to before", items)));
    }

    /// `/fork`: pick where the new session starts.
    pub fn open_fork(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let mut items = Vec::new();
        if let Some((last, _)) = self.agent.message_entries().last()
            && !last.is_empty()
        {
            items.push(MenuItem::new(
                "The whole conversation",
                Choice::Fork(last.clone()),
            ));
        }
        for (entry, text) in self.user_messages() {
            items.push(MenuItem::new(text, Choice::Fork(entry)).note("(and edit it)"));
        }
        if items.is_empty() {
            return self.notice("Nothing to fork yet: no message is in the session file.");
        }
        self.views
            .push(Box::new(Menu::new("Fork a new session from before", items)));
    }

    /// `/tree`: the session's branches, to switch between.
    pub fn open_tree(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let Some(agent) = self.agent.local().cloned() else {
            return self.warning(crate::live::link::OWNER_ONLY);
        };
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let tree = agent.tree().await.map_err(|e| e.to_string());
            let _ = tasks.send(TaskResult::Tree(tree));
        });
    }

    /// A menu's choice (the menu is closed already).
    pub fn choose(&mut self, choice: Choice) {
        match choice {
            Choice::RewindTo { entry, preview } => self.ask_what_to_rewind(entry, preview),
            Choice::Rewind { entry, mode, force } => {
                let retry = Choice::Rewind {
                    entry: entry.clone(),
                    mode,
                    force: true,
                };
                let rewind = Command::Rewind {
                    target: RewindTarget::Entry { entry_id: entry },
                    restore: mode,
                    force,
                };
                self.execute_then(rewind, After::Rewound { retry, undo: false });
            }
            Choice::UndoRewind { force } => {
                let retry = Choice::UndoRewind { force: true };
                let undo = Command::UndoRewind { force };
                self.execute_then(undo, After::Rewound { retry, undo: true });
            }
            Choice::Fork(entry_id) => self.execute_then(Command::Fork { entry_id }, After::Forked),
            Choice::SwitchTo { entry, preview } => self.ask_how_to_switch(entry, preview),
            Choice::Switch {
                entry,
                files,
                force,
            } => {
                let retry = Choice::Switch {
                    entry: entry.clone(),
                    files,
                    force: true,
                };
                let switch = Command::SwitchBranch {
                    entry_id: entry,
                    restore_files: files,
                    force,
                };
                self.execute_then(switch, After::SwitchedBranch { retry, files });
            }
            Choice::ApprovePlan(mode) => self.approve_plan(mode),
            Choice::KillShell(id) => self.kill_shell(id),
            Choice::TrustHooks(trusted) => self.answer_hook_trust(trusted),
            Choice::Resume(path) => self.resume_picked(path),
            Choice::Theme { palette, keep } => self.theme_chosen(palette, keep),
            Choice::Cancel => {}
        }
    }

    /// What a rewind to before `entry` restores: the conversation, the code, or both.
    fn ask_what_to_rewind(&mut self, entry: String, preview: String) {
        let mut items = vec![MenuItem::new(
            "Conversation only",
            Choice::Rewind {
                entry: entry.clone(),
                mode: RestoreMode::Conversation,
                force: false,
            },
        )];
        if self.settings.checkpoints.enabled {
            let code = |mode| Choice::Rewind {
                entry: entry.clone(),
                mode,
                force: false,
            };
            items.insert(
                0,
                MenuItem::new("Conversation and code", code(RestoreMode::Both)),
            );
            items.push(
                MenuItem::new("Code only", code(RestoreMode::Code))
                    .note("(the files as they were before it)"),
            );
        }
        self.views.push(Box::new(Menu::new(
            format!("Rewind to before “{preview}”:"),
            items,
        )));
    }

    /// What switching to the branch whose tip is `entry` brings back: the conversation,
    /// or the files as that branch left them too (when there are checkpoints).
    fn ask_how_to_switch(&mut self, entry: String, preview: String) {
        let switch = |files| Choice::Switch {
            entry: entry.clone(),
            files,
            force: false,
        };
        if !self.settings.checkpoints.enabled {
            return self.choose(switch(false));
        }
        let items = vec![
            MenuItem::new("Conversation and code", switch(true))
                .note("(the files as that branch left them)"),
            MenuItem::new("Conversation only", switch(false)).note("(the files stay as they are)"),
        ];
        self.views.push(Box::new(Menu::new(
            format!("Switch to the branch of “{preview}”:"),
            items,
        )));
    }

    /// A branch switch ended: what it did to the conversation and, when asked, the files.
    pub(super) fn switched_branch(&mut self, files: Option<RestoreSummary>, asked: bool) {
        let mut said = vec!["the conversation goes on from there".to_string()];
        match files {
            Some(summary) => said.push(files_said(&summary)),
            None if asked => {
                said.push("that branch changed no files: they stay as they are".to_string())
            }
            None => {}
        }
        self.notice(&format!("Switched branch: {}", said.join("; ")));
        self.reshow(6);
    }

    /// The session's tree was read (`/tree`).
    pub fn on_tree(&mut self, tree: Result<SessionTree, String>) {
        match tree {
            Ok(tree) => self.show_tree(&tree),
            Err(e) => self.warning(&format!("Cannot read the session: {e}")),
        }
        self.dirty = true;
    }

    /// A rewind (or its undo) ended: what it did to the files and the conversation.
    pub(super) fn rewound(
        &mut self,
        summary: Option<RestoreSummary>,
        text: Option<String>,
        undo: bool,
    ) {
        let mut said = Vec::new();
        if let Some(summary) = &summary {
            said.push(files_said(summary));
        }
        if undo {
            said.push("the conversation and files are as before the rewind".to_string());
        } else if text.is_some() {
            said.push(
                "the conversation goes on from before that message (the rest stays in the session: /tree)"
                    .to_string(),
            );
        }
        let what = if undo { "Rewind undone" } else { "Rewound" };
        self.notice(&format!("{what}: {}", said.join("; ")));
        if let Some(text) = text {
            self.input.composer.set_text(&text);
        }
        if undo {
            self.reshow(6);
        }
    }

    /// The user messages of every branch as a tree: a branch point says how many branches
    /// part there and each branch hangs from it on a connector (`├─`, `└─`, `│`); the
    /// current branch is marked `●`. Choosing a message continues at the tip of the branch
    /// through it (the current one if it is on it, else the latest written).
    fn show_tree(&mut self, tree: &SessionTree) {
        match super::tree_menu::tree_menu(tree) {
            Some(menu) => self.views.push(Box::new(menu)),
            None => self.notice(
                "This session has no messages yet: /tree shows its branches once it has some.",
            ),
        }
    }
}

/// What a restore did to the files, in a few words ("files: 3 restored, 1 removed").
fn files_said(summary: &RestoreSummary) -> String {
    let mut files = format!("files: {}", summary.describe());
    if !summary.not_restored.is_empty() {
        let left: Vec<&str> = summary
            .not_restored
            .iter()
            .take(3)
            .map(|s| s.path.as_str())
            .collect();
        files.push_str(&format!(" (left as they are: {})", left.join(", ")));
    }
    files
}

/// "3 restored, 1 removed" (and what was left alone).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
