//! Signing in from inside a running agent (the interface's `/login` and `/logout`): the
//! same store and flows as `agent login`, with what the user must see (a device code and
//! its address, a sign-in address) handed to the caller instead of printed, so a front end
//! shows it its own way. Keys are checked as `agent login` checks them and registered to be
//! masked before anything else sees them.

use super::credential::{Credential, Tokens};
use super::error::AuthError;
use super::store::{Location, Store, account_id, check_account};
use super::{chatgpt, copilot};

/// A typed key, trimmed: `Err` when empty or with spaces or control characters.
pub fn valid_key(typed: &str) -> Result<String, AuthError> {
    let key = typed.trim().to_string();
    if key.is_empty() {
        return Err(AuthError::flow("no key was entered; nothing was stored"));
    }
    if key.chars().any(char::is_control) || key.contains(' ') {
        return Err(AuthError::flow(
            "the key contains spaces or control characters; nothing was stored",
        ));
    }
    crate::secrets::register(&key);
    Ok(key)
}

/// Whether `provider` has an account sign-in (ChatGPT, Copilot) rather than a key.
pub fn has_account_sign_in(provider: &str) -> bool {
    super::command::ACCOUNT_PROVIDERS
        .iter()
        .any(|(name, _)| *name == provider)
}

fn store() -> Result<Store, AuthError> {
    let paths = crate::config::paths().map_err(|e| AuthError::store(e.to_string()))?;
    let store = Store::open(&paths.home);
    if let Some(why) = store.keyring_required_but_missing() {
        return Err(AuthError::store(why));
    }
    Ok(store)
}

/// Why `account` cannot name an account, as a flow error.
pub fn check(account: Option<&str>) -> Result<(), AuthError> {
    match account {
        Some(account) => check_account(account).map_err(AuthError::flow),
        None => Ok(()),
    }
}

/// Keep `credential` as `provider`'s `account` (`None`: its default one): where it went.
/// Blocking (the store's lock): call it off the async threads.
pub fn save(
    provider: &str,
    account: Option<&str>,
    credential: &Credential,
) -> Result<Location, AuthError> {
    check(account)?;
    let store = store()?;
    let lock = store.lock()?;
    store.save(&lock, &account_id(provider, account), credential)
}

/// Forget `provider`'s `account` (`None`: its default one): whether one was stored.
/// Blocking, as `save`.
pub fn remove(provider: &str, account: Option<&str>) -> Result<bool, AuthError> {
    let store = store()?;
    let lock = store.lock()?;
    store.remove(&lock, &account_id(provider, account))
}

/// Sign in to `provider`'s account (ChatGPT: in the browser, or with a device code when
/// `device`; Copilot: a device code). `say` gets what the user must see and do.
pub async fn account_sign_in(
    provider: &str,
    device: bool,
    say: impl Fn(String) + Send + Sync,
) -> Result<Tokens, AuthError> {
    let show_code = |url: &str, code: &str| {
        say(format!(
            "To sign in, open {url} and enter the code {code} (waiting for the sign-in to be approved…)"
        ))
    };
    match provider {
        "chatgpt" if device => {
            chatgpt::sign_in_device(chatgpt::ISSUER, show_code, tokio::time::sleep).await
        }
        "chatgpt" => chatgpt::sign_in_browser(chatgpt::ISSUER, |url: String| {
            say(format!(
                "Open this address to sign in (a browser is being started if there is one): {url}"
            ));
            start_browser(url)
        })
        .await,
        "copilot" => {
            copilot::sign_in(
                &copilot::Endpoints::default(),
                |code| show_code(&code.verification_uri, &code.user_code),
                tokio::time::sleep,
            )
            .await
        }
        other => Err(AuthError::flow(format!(
            "provider `{other}` has no account sign-in: it takes an API key"
        ))),
    }
}

/// Start the system's browser on `url` (not with `AGENT_NO_BROWSER` set); nothing is said
/// when there is none.
pub async fn start_browser(url: String) {
    if std::env::var_os("AGENT_NO_BROWSER").is_some() {
        return;
    }
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = tokio::process::Command::new(program)
        .arg(&url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
