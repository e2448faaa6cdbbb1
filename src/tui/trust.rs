//! The question a project's hooks need before they run: its settings files define commands
//! that would run on this machine, so the user is asked once per project (and again when
//! the hooks change); the answer is remembered (`extensions::hooks::trust`).

use super::app::App;
use super::views::menu::{Choice, Menu, MenuItem};
use crate::extensions::hooks::trust::{ProjectHooks, TrustStore};

impl App {
    /// Show the project's hooks and ask whether to run them. SessionStart hooks run once
    /// the user answered (with the project's, if trusted).
    pub fn ask_hook_trust(&mut self, project: ProjectHooks) {
        let files: Vec<String> = project
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        let mut text = format!(
            "This project's settings ({}) define hooks — commands that run on your machine:",
            files.join(", ")
        );
        for line in project.describe() {
            text.push_str("\n  ");
            text.push_str(&line);
        }
        self.warning(&text);
        self.views.push(Box::new(
            Menu::new(
                "Run this project's hooks?",
                vec![
                    MenuItem::new("Yes, trust them", Choice::TrustHooks(Some(true)))
                        .note("(asked again if they change)"),
                    MenuItem::new("No, do not run them", Choice::TrustHooks(Some(false)))
                        .note("(not asked again until they change)"),
                ],
            )
            .on_esc(Choice::TrustHooks(None)),
        ));
        self.views.untrusted_hooks = Some(project);
    }

    /// The answer (`None`: the question was closed without one; asked again next time).
    pub fn answer_hook_trust(&mut self, trusted: Option<bool>) {
        let Some(project) = self.views.untrusted_hooks.take() else {
            return;
        };
        if let Some(trusted) = trusted {
            let store = TrustStore::in_home(&self.settings.paths.home);
            if let Err(e) = store.remember(&project, trusted) {
                self.warning(&format!("Could not remember the answer: {e}"));
            }
            if trusted {
                if let Some(agent) = self.agent.local() {
                    agent.hooks().add(project.specs.clone());
                }
                self.notice("The project's hooks run from now on.");
            } else {
                self.notice("The project's hooks are not run.");
            }
        } else {
            self.notice("The project's hooks are not run this time.");
        }
        let agent = self.agent.clone();
        crate::tasks::spawn(async move { agent.session_start().await });
    }
}
