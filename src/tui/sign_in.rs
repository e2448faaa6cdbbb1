//! `/profile`, `/login` and `/logout`: switching to a configured profile (the engine's
//! `SetProfile`), and signing in or out without leaving the interface (`auth::interactive`,
//! the store and flows of `agent login`). An API key is typed into a hidden entry that
//! takes every key and paste until enter or esc: nothing of it is drawn (not even its
//! length), and it never reaches the composer, the history or the transcript. A device
//! sign-in shows its address and code as a notice.

use super::app::{App, TaskResult};
use crate::agent::commands::Control;
use crate::auth::credential::Credential;
use crate::auth::interactive;
use crate::protocol::command::Command as EngineCommand;
use crate::protocol::outcome::Outcome;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// An API key being typed for `provider`'s `account`.
pub struct SecretEntry {
    provider: String,
    account: Option<String>,
    typed: String,
}

/// `/login`'s and `/logout`'s words: the provider, `--account NAME`, `--device`,
/// `--api-key`.
struct LoginArgs {
    provider: String,
    account: Option<String>,
    device: bool,
    api_key: bool,
}

fn parse(arg: &str) -> Result<LoginArgs, String> {
    let mut words = arg.split_whitespace();
    let mut args = LoginArgs {
        provider: String::new(),
        account: None,
        device: false,
        api_key: false,
    };
    while let Some(word) = words.next() {
        match word {
            "--account" => {
                args.account = Some(words.next().ok_or("--account needs a name")?.to_string())
            }
            "--device" => args.device = true,
            "--api-key" => args.api_key = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option `{flag}`")),
            name if args.provider.is_empty() => args.provider = name.to_string(),
            extra => return Err(format!("unexpected `{extra}`")),
        }
    }
    Ok(args)
}

fn target(provider: &str, account: Option<&str>) -> String {
    match account {
        Some(account) => format!("`{provider}` (account `{account}`)"),
        None => format!("`{provider}`"),
    }
}

impl App {
    pub(super) fn profile_command(&mut self, arg: &str) {
        if arg.is_empty() {
            let profiles = self.agent.profiles();
            if profiles.is_empty() {
                return self.notice(
                    "No profiles. A [profiles.NAME] in config.toml groups provider, model, account, permission mode, sandbox and MCP servers (docs/protocol.md §5.5).",
                );
            }
            let current = self.agent.snapshot().profile;
            return self.notice(&format!(
                "Profile: {} — switch with /profile NAME; profiles: {}",
                current.as_deref().unwrap_or("none"),
                profiles.join(", ")
            ));
        }
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let (agent, tasks) = (self.agent.clone(), self.tasks.clone());
        let name = arg.to_string();
        crate::tasks::spawn(async move {
            let said = match agent
                .execute(EngineCommand::SetProfile { name }, Control::new())
                .await
            {
                Ok(Outcome::Profile { profile }) => TaskResult::Notice(format!(
                    "Profile: {} — {}/{}{}, {} mode, sandbox {}",
                    profile.name,
                    profile.model.provider,
                    profile.model.id,
                    profile
                        .account
                        .as_deref()
                        .map(|a| format!(" (account {a})"))
                        .unwrap_or_default(),
                    profile.permission_mode.as_str(),
                    profile.sandbox
                )),
                Ok(_) => TaskResult::Notice("Profile unchanged".to_string()),
                Err(e) => TaskResult::Warning(e.to_string()),
            };
            let _ = tasks.send(said);
        });
    }

    pub(super) fn login_command(&mut self, arg: &str) {
        let args = match parse(arg) {
            Ok(args) if !args.provider.is_empty() => args,
            Ok(_) => {
                return self.notice(
                    "Sign in with /login PROVIDER [--account NAME]: an API key for any provider (typed hidden), a ChatGPT account (/login chatgpt [--device]) or GitHub Copilot (/login copilot)",
                );
            }
            Err(why) => return self.warning(&format!("/login: {why}")),
        };
        if let Err(e) = interactive::check(args.account.as_deref()) {
            return self.warning(&format!("/login: --account: {e}"));
        }
        if let Err(why) = self.settings.resolve_model(&args.provider, "-") {
            return self.warning(&format!("/login: {why}"));
        }
        if args.api_key || !interactive::has_account_sign_in(&args.provider) {
            self.notice(&format!(
                "Type the API key for {} and press enter: it is not shown. Esc cancels.",
                target(&args.provider, args.account.as_deref())
            ));
            self.input.secret = Some(SecretEntry {
                provider: args.provider,
                account: args.account,
                typed: String::new(),
            });
            return;
        }
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let say = {
                let tasks = tasks.clone();
                move |text: String| drop(tasks.send(TaskResult::Notice(text)))
            };
            let signed_in = interactive::account_sign_in(&args.provider, args.device, say).await;
            let result = match signed_in {
                Ok(tokens) => {
                    let who = tokens.account.clone();
                    let credential = Credential::Oauth(tokens);
                    let (provider, account) = (args.provider.clone(), args.account.clone());
                    crate::tasks::spawn_blocking(move || {
                        interactive::save(&provider, account.as_deref(), &credential)
                    })
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|saved| saved.map_err(|e| e.to_string()))
                    .map(|location| (who, location))
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = tasks.send(match result {
                Ok((who, location)) => TaskResult::Notice(format!(
                    "Signed in to {}{}; the credential is in {location}.",
                    target(&args.provider, args.account.as_deref()),
                    who.map(|w| format!(" as {w}")).unwrap_or_default()
                )),
                Err(why) => TaskResult::Warning(format!("Not signed in: {why}")),
            });
        });
    }

    pub(super) fn logout_command(&mut self, arg: &str) {
        let args = match parse(arg) {
            Ok(args) if !args.provider.is_empty() => args,
            Ok(_) => return self.notice("Sign out with /logout PROVIDER [--account NAME]"),
            Err(why) => return self.warning(&format!("/logout: {why}")),
        };
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let (provider, account) = (args.provider.clone(), args.account.clone());
            let removed = crate::tasks::spawn_blocking(move || {
                interactive::remove(&provider, account.as_deref())
            })
            .await;
            let who = target(&args.provider, args.account.as_deref());
            let _ = tasks.send(match removed {
                Ok(Ok(true)) => TaskResult::Notice(format!("Signed out of {who}.")),
                Ok(Ok(false)) => TaskResult::Notice(format!("No credential was stored for {who}.")),
                Ok(Err(e)) => TaskResult::Warning(e.to_string()),
                Err(e) => TaskResult::Warning(e.to_string()),
            });
        });
    }

    /// A key while an API key is being typed: taken (`true`) whatever it is. Enter stores
    /// the key, esc or ctrl+c drops it.
    pub(super) fn secret_key(&mut self, key: KeyEvent) -> bool {
        let Some(entry) = self.input.secret.as_mut() else {
            return false;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.cancel_secret(),
            KeyCode::Char('c') if ctrl => self.cancel_secret(),
            KeyCode::Char('u') if ctrl => entry.typed.clear(),
            KeyCode::Char(c) if !ctrl => entry.typed.push(c),
            KeyCode::Backspace => drop(entry.typed.pop()),
            KeyCode::Enter => self.store_secret(),
            _ => {}
        }
        self.dirty = true;
        true
    }

    /// A paste while an API key is being typed goes to it (`true`), never to the composer.
    pub(super) fn secret_paste(&mut self, text: &str) -> bool {
        let Some(entry) = self.input.secret.as_mut() else {
            return false;
        };
        entry.typed.push_str(text.trim());
        self.dirty = true;
        true
    }

    /// What the status line says while an API key is being typed.
    pub(super) fn secret_prompt(&self) -> Option<String> {
        let entry = self.input.secret.as_ref()?;
        Some(format!(
            "API key for {}: hidden",
            target(&entry.provider, entry.account.as_deref())
        ))
    }

    fn cancel_secret(&mut self) {
        self.input.secret = None;
        self.notice("Nothing was stored.");
    }

    fn store_secret(&mut self) {
        let Some(entry) = self.input.secret.take() else {
            return;
        };
        let key = match interactive::valid_key(&entry.typed) {
            Ok(key) => key,
            Err(e) => return self.warning(&format!("Not signed in: {e}")),
        };
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let who = target(&entry.provider, entry.account.as_deref());
            let (provider, account) = (entry.provider, entry.account);
            let saved = crate::tasks::spawn_blocking(move || {
                interactive::save(&provider, account.as_deref(), &Credential::ApiKey { key })
            })
            .await;
            let _ = tasks.send(match saved {
                Ok(Ok(location)) => TaskResult::Notice(format!(
                    "Signed in to {who}; the credential is in {location}."
                )),
                Ok(Err(e)) => TaskResult::Warning(format!("Not signed in: {e}")),
                Err(e) => TaskResult::Warning(format!("Not signed in: {e}")),
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_words_are_read() {
        let args = parse("acme --account work --api-key").unwrap();
        assert_eq!(args.provider, "acme");
        assert_eq!(args.account.as_deref(), Some("work"));
        assert!(args.api_key && !args.device);
        assert!(parse("chatgpt --device").unwrap().device);
        assert!(parse("acme --account").is_err());
        assert!(parse("acme --bogus").is_err());
        assert!(parse("acme extra").is_err());
        assert!(parse("").unwrap().provider.is_empty());
    }
}
