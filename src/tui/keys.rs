//! What each key does, in one order: a key release is ignored; the composer's own modes that
//! take every key (an API key being typed, leaving the ctrl+r search) come first; then the
//! global keys (ctrl+c, ctrl+z, ctrl+t, ctrl+o, ctrl+g); then the full-screen view, when
//! one is open; then the view stack, top first (`views::Views::route`: a view that passes
//! hands the key to the one below); then the composer — slash-command completion, the `@`
//! picker, esc (esc esc on an empty composer rewinds), shift+tab, ctrl+d, ctrl+v, alt+↑,
//! submit and follow-up.

use super::app::App;
use super::commands::completions;
use super::composer::Action;
use super::views::Next;
use crate::protocol::command::{Command, Delivery};
use crate::protocol::message::UserMessage;
use crate::protocol::outcome::Outcome;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::time::{Duration, Instant};

/// How long after a first ctrl+c a second one quits.
const QUIT_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, PartialEq, Eq)]
pub enum KeyOutcome {
    Handled,
    /// ctrl+z: the loop suspends the process.
    Suspend,
}

impl App {
    pub fn on_key(&mut self, key: KeyEvent) -> KeyOutcome {
        if key.kind == KeyEventKind::Release {
            return KeyOutcome::Handled;
        }
        self.dirty = true;
        // An API key being typed (`/login`) takes every key; esc, ctrl+c or ctrl+g leave
        // the history search.
        if self.secret_key(key) || self.search_cancel_key(key) {
            return KeyOutcome::Handled;
        }
        if let Some(outcome) = self.global_key(key) {
            return outcome;
        }
        // A keymap would look the key up here, in the context of the view on top.
        if self.full_screen_key(key) {
            return KeyOutcome::Handled;
        }
        // esc esc on an empty composer while idle: /rewind. Any other key in between
        // starts over.
        let armed = std::mem::take(&mut self.input.esc_armed);
        if self.stack_key(key) {
            return KeyOutcome::Handled;
        }
        self.composer_key(key, armed)
    }

    /// esc, ctrl+c and ctrl+g leave the ctrl+r history search (the draft comes back) before
    /// the global keys or esc esc's rewind see them, when the search is what has the keys.
    fn search_cancel_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let cancel = matches!(key.code, KeyCode::Esc)
            || (ctrl && matches!(key.code, KeyCode::Char('c' | 'g')));
        if !cancel
            || !self.input.composer.is_searching()
            || self.views.view.is_some()
            || !self.views.is_empty()
        {
            return false;
        }
        self.input.esc_armed = false;
        self.input.composer.handle_key(key);
        true
    }

    /// ctrl+c, ctrl+z, ctrl+t, ctrl+o and ctrl+g, whatever is open.
    fn global_key(&mut self, key: KeyEvent) -> Option<KeyOutcome> {
        if !key.modifiers.contains(KeyModifiers::CONTROL) {
            return None;
        }
        match key.code {
            KeyCode::Char('c') => self.ctrl_c_key(),
            KeyCode::Char('z') => return Some(KeyOutcome::Suspend),
            KeyCode::Char('t') => self.toggle_thinking(),
            KeyCode::Char('o') => self.toggle_view(),
            KeyCode::Char('g') => {
                if self.views.agent_focus.is_some() && self.views.view.is_some() {
                    self.views.agent_focus = None;
                    self.views.view = None;
                } else {
                    self.open_agent_view(None);
                }
            }
            _ => return None,
        }
        Some(KeyOutcome::Handled)
    }

    /// A key for the agent view or the transcript view, when one is open.
    fn full_screen_key(&mut self, key: KeyEvent) -> bool {
        if self.views.agent_focus.is_some() && self.views.view.is_some() {
            self.agent_view_key(key);
        } else if self.views.view.is_some() {
            self.view_key(key);
        } else {
            return false;
        }
        true
    }

    /// A key for the view stack, top first: `false` when every view passed it (or none is
    /// open), and the composer has it.
    fn stack_key(&mut self, key: KeyEvent) -> bool {
        let Some((index, next)) = self.views.route(|view| view.key(key)) else {
            return false;
        };
        match next {
            Next::Early => self.early_approval_key(key),
            next => self.follow(index, next),
        }
        true
    }

    /// ctrl+c: the view stack's first (a view may close itself), else stop the run or quit.
    fn ctrl_c_key(&mut self) {
        match self.views.route(|view| view.ctrl_c()) {
            Some((index, next)) => self.follow(index, next),
            None => self.ctrl_c(),
        }
    }

    /// A key for the `@` picker while it is open: `Some` when it took it.
    fn mention_key(&mut self, key: KeyEvent) -> Option<KeyOutcome> {
        // enter on a word that already names the highlighted path sends the prompt.
        if !self.mention_open() || (key.code == KeyCode::Enter && self.mention_is_exact()) {
            return None;
        }
        let plain = key.modifiers.is_empty();
        match key.code {
            KeyCode::Up if plain => Some(self.handled(|app| app.mention_up())),
            KeyCode::Down if plain => Some(self.handled(|app| app.mention_down())),
            KeyCode::Tab | KeyCode::Enter if plain => {
                Some(self.handled(|app| app.choose_mention()))
            }
            KeyCode::Esc => Some(self.handled(|app| app.dismiss_mention())),
            _ => None,
        }
    }

    /// A key for the composer: completion, esc, the composer's own keys.
    fn composer_key(&mut self, key: KeyEvent, armed: bool) -> KeyOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let completing = !self.input.popup_closed
            && !completions(self.input.composer.single_line(), &self.settings.extensions)
                .is_empty();
        let before = self.input.composer.single_line().to_string();
        if let Some(outcome) = self.mention_key(key) {
            return outcome;
        }
        match key.code {
            // Esc closes the command popup first; with nothing open it stops the agent.
            KeyCode::Esc if completing => self.input.popup_closed = true,
            KeyCode::Esc if !self.is_working() && self.input.composer.is_empty() => {
                self.esc_on_empty(armed)
            }
            KeyCode::Esc => self.interrupt(),
            KeyCode::BackTab => self.cycle_permission_mode(),
            KeyCode::Char('d') if ctrl && self.input.composer.is_empty() => self.exit = Some(0),
            // ctrl+v reaches us as a key (terminals paste text with a binding of their own,
            // as a bracketed paste): the clipboard's image, if it holds one.
            KeyCode::Char('v') if ctrl && !alt && !self.input.composer.is_searching() => {
                self.paste_clipboard_image()
            }
            KeyCode::Up if alt => self.unqueue_last(),
            KeyCode::Tab if completing => {
                self.complete();
            }
            KeyCode::Up if completing && !alt => {
                self.input.completion = self.input.completion.saturating_sub(1)
            }
            KeyCode::Down if completing && !alt => {
                let count =
                    completions(self.input.composer.single_line(), &self.settings.extensions).len();
                self.input.completion = (self.input.completion + 1).min(count.saturating_sub(1));
            }
            // `/mo` + enter runs the highlighted command, as tab + enter would.
            KeyCode::Enter if completing && key.modifiers.is_empty() => {
                self.complete();
                let command = self.input.composer.text();
                self.input.composer.clear();
                self.input.composer.remember(&command);
                self.submit(command.trim_end().to_string());
            }
            _ => match self.input.composer.handle_key(key) {
                Action::Submit(text) => self.submit(text),
                Action::FollowUp(text) => self.follow_up_text(text),
                Action::Edited => {
                    self.input.completion = self.input.completion.min(
                        completions(self.input.composer.single_line(), &self.settings.extensions)
                            .len()
                            .saturating_sub(1),
                    )
                }
            },
        }
        if self.input.composer.single_line() != before {
            self.input.popup_closed = false;
        }
        self.update_mention();
        KeyOutcome::Handled
    }

    /// esc on an empty composer while idle: the second one in a row opens `/rewind`.
    fn esc_on_empty(&mut self, armed: bool) {
        self.interrupt();
        if armed {
            self.open_rewind();
        } else {
            self.input.esc_armed = true;
            self.set_hint("esc again to rewind");
        }
    }

    /// alt+↑: the last queued message comes back into the composer, above what it holds.
    fn unqueue_last(&mut self) {
        if let Some(Ok(Outcome::Unqueued {
            message: Some(message),
        })) = self.execute_now(Command::UnqueueLast)
        {
            let text = message.plain_text();
            let current = self.input.composer.text();
            self.input.composer.set_text(&if current.is_empty() {
                text
            } else {
                format!("{text}\n{current}")
            });
        }
    }

    /// Run `act`, then follow the `@` word (a chosen path may end in a directory).
    fn handled(&mut self, act: impl FnOnce(&mut Self)) -> KeyOutcome {
        act(self);
        self.update_mention();
        self.dirty = true;
        KeyOutcome::Handled
    }

    pub fn on_paste(&mut self, text: &str) {
        self.dirty = true;
        if self.secret_paste(text) {
            return;
        }
        // The view on top takes it (the approval's message), or lets it through.
        if self.views.top_mut().is_some_and(|view| view.paste(text)) {
            return;
        }
        // Pasted image files (a terminal's drag and drop pastes their paths): chips.
        if !self.paste_image_paths(text) {
            self.input.composer.insert(text);
        }
    }

    /// Enter: a command, a shell command, a prompt, or (while working) a steering message.
    pub fn submit(&mut self, text: String) {
        if let Some(problem) = self.input.composer.take_history_error() {
            self.warning(&problem);
        }
        let trimmed = text.trim();
        // A known command runs, and a lone unknown word (`/bogus`) is a typo; anything
        // else that starts with a slash ("/tmp is full", "/etc/hosts") is a prompt.
        if let Some(rest) = trimmed.strip_prefix('/')
            && let Some(word) = rest.split_whitespace().next()
            && (super::commands::is_command(word, &self.settings.extensions)
                || (rest == word && !word.contains('/')))
        {
            return self.run_command(trimmed);
        }
        if let Some(command) = trimmed.strip_prefix('!') {
            return self.run_shell(command);
        }
        if let Some(problem) = self.unknown_chips(&text) {
            self.input.composer.set_text(&text);
            return self.warning(&problem);
        }
        // While the agent works it is steered; when idle the message starts a run.
        self.send_prompt(text, Delivery::Steer);
    }

    /// esc: stop the run; queued messages come back to the composer so nothing is lost.
    pub(super) fn interrupt(&mut self) {
        self.run.shell_cancel.cancel();
        self.run.shell_cancel = tokio_util::sync::CancellationToken::new();
        if !self.agent.is_running() {
            return;
        }
        let Some(Ok(Outcome::Aborted { queued })) = self.execute_now(Command::Abort) else {
            return;
        };
        if queued.is_empty() {
            return;
        }
        let mut texts: Vec<String> = queued.iter().map(UserMessage::plain_text).collect();
        let current = self.input.composer.text();
        if !current.trim().is_empty() {
            texts.push(current);
        }
        self.input.composer.set_text(&texts.join("\n"));
        self.set_hint("stopped; queued messages are back in the composer");
    }

    fn ctrl_c(&mut self) {
        if self.is_working() {
            self.interrupt();
            return;
        }
        let now = Instant::now();
        if self
            .status
            .quit_armed
            .is_some_and(|armed| now.duration_since(armed) < QUIT_WINDOW)
        {
            self.exit = Some(0);
            return;
        }
        self.input.composer.clear();
        self.status.quit_armed = Some(now);
        self.set_hint("press ctrl+c again to quit");
    }
}
