//! A configured provider endpoint: which wire API it speaks, where it is, and how the agent
//! authenticates to it. Keys never leave this module except into a request header: `Debug`
//! redacts them and nothing here logs them.

use super::error::ProviderError;
use std::fmt;
use std::time::Duration;

/// A wire API, by name: the registration, its names and its implementations are in
/// `llm::wire` (`Api::wire`, `Api::ALL`, `Api::as_str`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    /// `agent proxy` (docs/protocol.md §8).
    AgentProxy,
}

#[derive(Clone)]
pub struct ProviderSettings {
    pub name: String,
    pub api: Api,
    pub base_url: String,
    /// A key given directly (`--api-key`); wins over the command and the env var.
    pub api_key: Option<String>,
    pub api_key_env: Option<String>,
    pub api_key_command: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Which of the provider's stored credentials requests use (`agent login --account`, a
    /// profile's `account`); `None`: the default one.
    pub account: Option<String>,
}

impl fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("name", &self.name)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field(
                "api_key_command",
                &self.api_key_command.as_ref().map(|_| "<set>"),
            )
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("account", &self.account)
            .finish()
    }
}

const KEY_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

impl ProviderSettings {
    /// The key for the next request: `--api-key`, else the output of `api_key_command` (run
    /// every time, so short-lived tokens refresh), else the env var. Hosted endpoints need
    /// one; a local server (Ollama, llama.cpp...) is asked without.
    /// Every key returned is registered with `secrets`, so it is masked wherever the agent
    /// writes text; the env var is read from where `secrets` keeps it (it is no longer in
    /// the process environment).
    pub async fn resolve_key(&self) -> Result<Option<String>, ProviderError> {
        if let Some(key) = self.api_key.as_ref().filter(|k| !k.is_empty()) {
            crate::secrets::register(key);
            return Ok(Some(key.clone()));
        }
        // A named account (a profile's) is that account's stored credential and nothing
        // else: a key variable set for the provider must not quietly stand in for it.
        if let Some(account) = self.named_account() {
            return match crate::auth::requests::provider_key(&self.name, Some(account)).await {
                Ok(Some(key)) => Ok(Some(key)),
                Ok(None) => Err(ProviderError::SignIn(format!(
                    "account `{account}` of provider `{}` is not signed in: run `agent login --provider {} --account {account}`",
                    self.name, self.name
                ))),
                Err(e) => Err(ProviderError::SignIn(e.to_string())),
            };
        }
        if let Some(command) = &self.api_key_command {
            let key = self.run_key_command(command).await?;
            crate::secrets::register(&key);
            return Ok(Some(key));
        }
        if let Some(var) = &self.api_key_env
            && let Some(key) = crate::secrets::env_key(var)
            && !key.trim().is_empty()
        {
            crate::secrets::register(&key);
            return Ok(Some(key.trim().to_string()));
        }
        // Last, what `agent login` stored (a token renewed first when about to expire).
        match crate::auth::requests::provider_key(&self.name, None).await {
            Ok(Some(key)) => return Ok(Some(key)),
            Ok(None) => {}
            Err(e) => return Err(ProviderError::SignIn(e.to_string())),
        }
        if self.is_hosted() {
            return Err(ProviderError::MissingKey {
                provider: self.name.clone(),
                how: self.key_instructions(),
            });
        }
        Ok(None)
    }

    /// Why requests would fail for want of a key, found without running anything (an
    /// `api_key_command` counts as a key): `None` when a key is there or none is needed.
    pub fn missing_key(&self) -> Option<String> {
        let given = self.api_key.as_ref().is_some_and(|k| !k.is_empty());
        if let Some(account) = self.named_account()
            && !given
        {
            return (!crate::auth::requests::has_stored_for(&self.name, Some(account))).then(
                || {
                    format!(
                        "account `{account}` of provider `{}` is not signed in: run `agent login --provider {} --account {account}`",
                        self.name, self.name
                    )
                },
            );
        }
        let from_env = self
            .api_key_env
            .as_ref()
            .and_then(|var| crate::secrets::env_key(var))
            .is_some_and(|key| !key.trim().is_empty());
        if given || from_env || self.api_key_command.is_some() || !self.is_hosted() {
            return None;
        }
        if crate::auth::requests::has_stored_for(&self.name, None) {
            return None;
        }
        Some(format!(
            "provider `{}` needs an API key: set {}",
            self.name,
            self.key_instructions()
        ))
    }

    /// The account named for this provider (`None`: the default one).
    pub fn named_account(&self) -> Option<&str> {
        self.account.as_deref().filter(|a| !a.is_empty())
    }

    /// How to supply a key, for error messages.
    pub fn key_instructions(&self) -> String {
        let login = match self.named_account() {
            Some(account) => format!("agent login --provider {} --account {account}", self.name),
            None => format!("agent login --provider {}", self.name),
        };
        match &self.api_key_env {
            Some(var) => {
                format!("the {var} environment variable, pass --api-key, or run `{login}`")
            }
            None => format!(
                "api_key_env or api_key_command in [providers.{}] of config.toml, pass --api-key, or run `{login}`",
                self.name
            ),
        }
    }

    /// A hint for authentication failures.
    pub fn auth_hint(&self) -> String {
        if self.api_key.is_some() {
            "check the key given with --api-key".to_string()
        } else if self.api_key_command.is_some() {
            format!("check api_key_command of provider `{}`", self.name)
        } else if let Some(var) = &self.api_key_env {
            format!("check {var}")
        } else {
            format!(
                "set api_key_env for provider `{}` in config.toml",
                self.name
            )
        }
    }

    /// Cloud endpoints that always need a key, so a missing one fails before any request.
    fn is_hosted(&self) -> bool {
        let host = host_of(&self.base_url);
        [
            "api.openai.com",
            "api.anthropic.com",
            "openrouter.ai",
            "api.groq.com",
            "api.deepseek.com",
            "api.mistral.ai",
            "api.x.ai",
            "generativelanguage.googleapis.com",
        ]
        .iter()
        .any(|hosted| host == *hosted || host.ends_with(&format!(".{hosted}")))
    }

    async fn run_key_command(&self, command: &str) -> Result<String, ProviderError> {
        let fail = |detail: String| ProviderError::KeyCommand {
            provider: self.name.clone(),
            detail,
        };
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(format!("could not start it: {e}")))?;
        let output = tokio::time::timeout(KEY_COMMAND_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| {
                fail(format!(
                    "no answer within {} s",
                    KEY_COMMAND_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| fail(e.to_string()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first_line = stderr.lines().next().unwrap_or("").trim();
            return Err(fail(
                format!("{} {first_line}", output.status).trim().to_string(),
            ));
        }
        let key = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if key.is_empty() {
            return Err(fail("it printed nothing".to_string()));
        }
        Ok(key)
    }
}

/// The host part of a URL, lowercased, without port or credentials.
pub fn host_of(url: &str) -> String {
    let after_scheme = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    let host = if host_port.starts_with('[') {
        host_port
            .split(']')
            .next()
            .map(|h| &h[1..])
            .unwrap_or(host_port)
    } else {
        host_port.split(':').next().unwrap_or(host_port)
    };
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(base_url: &str) -> ProviderSettings {
        ProviderSettings {
            name: "openai".into(),
            api: Api::OpenaiChat,
            base_url: base_url.into(),
            api_key: None,
            api_key_env: Some("AGENT_TEST_SURELY_UNSET_KEY".into()),
            api_key_command: None,
            headers: vec![],
            account: None,
        }
    }

    #[test]
    fn hosts_are_parsed() {
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(host_of("http://user:pw@127.0.0.1:11434/v1"), "127.0.0.1");
        assert_eq!(host_of("http://[::1]:8080"), "::1");
    }

    #[tokio::test]
    async fn a_missing_key_names_the_env_var_only_for_hosted_endpoints() {
        let err = settings("https://api.openai.com/v1")
            .resolve_key()
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("AGENT_TEST_SURELY_UNSET_KEY"),
            "{err}"
        );
        assert_eq!(
            settings("http://127.0.0.1:11434/v1")
                .resolve_key()
                .await
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_missing_key_is_found_without_running_anything() {
        let mut hosted = settings("https://api.openai.com/v1");
        let why = hosted.missing_key().unwrap();
        assert!(why.contains("AGENT_TEST_SURELY_UNSET_KEY"), "{why}");
        assert_eq!(settings("http://127.0.0.1:11434/v1").missing_key(), None);
        hosted.api_key_command = Some("exit 1".into());
        assert_eq!(hosted.missing_key(), None, "a command counts as a key");
        hosted.api_key_command = None;
        hosted.api_key = Some("sk-given".into());
        assert_eq!(hosted.missing_key(), None);
    }

    #[tokio::test]
    async fn the_key_command_runs_for_each_request() {
        let mut s = settings("https://api.openai.com/v1");
        s.api_key_command = Some("echo '  sk-from-command '".into());
        assert_eq!(
            s.resolve_key().await.unwrap().as_deref(),
            Some("sk-from-command")
        );
        s.api_key_command = Some("echo oops >&2; exit 3".into());
        let err = s.resolve_key().await.unwrap_err().to_string();
        assert!(err.contains("oops"), "{err}");
        let debug = format!(
            "{:?}",
            ProviderSettings {
                api_key: Some("sk-secret".into()),
                ..s
            }
        );
        assert!(!debug.contains("sk-secret"));
    }
}
