//! `/ps`: the background shells the model started (command, how long, status), in a menu
//! where enter kills the selected one (the model is told the user stopped it).

use super::app::{App, TaskResult};
use super::views::menu::{Choice, Menu, MenuItem};
use crate::tools::background::ShellStatus;
use std::time::Duration;

fn elapsed(time: Duration) -> String {
    let seconds = time.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m {:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h {:02}m", seconds / 3600, seconds / 60 % 60),
    }
}

impl App {
    pub fn ps_command(&mut self) {
        let Some(agent) = self.agent.local() else {
            return self.warning(crate::live::link::OWNER_ONLY);
        };
        let shells = agent.background_shells().list();
        if shells.is_empty() {
            return self.notice("No background shells.");
        }
        let items = shells
            .into_iter()
            .map(|shell| {
                let first_line = shell.command.lines().next().unwrap_or("").to_string();
                let choice = match shell.status {
                    ShellStatus::Running => Choice::KillShell(shell.id.clone()),
                    _ => Choice::Cancel,
                };
                MenuItem::new(format!("{}  {first_line}", shell.id), choice).note(format!(
                    "{} · {}",
                    elapsed(shell.elapsed),
                    shell.status.describe()
                ))
            })
            .collect();
        self.views.push(Box::new(Menu::new(
            "Background shells — enter kills a running one:",
            items,
        )));
        self.dirty = true;
    }

    pub fn kill_shell(&mut self, id: String) {
        let Some(agent) = self.agent.local() else {
            return self.warning(crate::live::link::OWNER_ONLY);
        };
        let shells = agent.background_shells();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let result = match shells.stop_by_user(&id).await {
                Some(status @ ShellStatus::Killed) => TaskResult::Notice(format!(
                    "{id}: {}. The model is told with its next request.",
                    status.describe()
                )),
                Some(status) => TaskResult::Notice(format!("{id}: {}.", status.describe())),
                None => TaskResult::Warning(format!("No background shell {id}.")),
            };
            let _ = tasks.send(result);
        });
    }
}
