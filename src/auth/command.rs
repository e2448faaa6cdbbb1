//! `agent login --provider NAME`, `agent logout [--provider NAME]` and `agent auth
//! status`: sign in (an account where the vendor offers one to tools like this, an API
//! key typed without echo for every provider), sign out, and show who is signed in where
//! — never a secret. Exit codes: 0 done, 1 failed, 2 usage.

use super::copilot;
use super::credential::Credential;
use super::error::AuthError;
use super::store::{Store, account_id, check_account, parse_provider_id};
use crate::cli::{AuthAction, LoginArgs, LogoutArgs};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

/// Providers with a sign-in flow (their vendor lets other tools use it).
pub const ACCOUNT_PROVIDERS: &[(&str, &str)] = &[
    (
        "chatgpt",
        "a ChatGPT account (browser, or --device without one)",
    ),
    ("copilot", "a GitHub Copilot subscription (device code)"),
];

fn home() -> Result<PathBuf, AuthError> {
    crate::config::paths()
        .map(|paths| paths.home)
        .map_err(|e| AuthError::store(e.to_string()))
}

fn finish(result: Result<(), AuthError>) -> u8 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agent: {e}");
            1
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, AuthError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AuthError::store(format!("cannot start the async runtime: {e}")))
}

pub fn login(args: &LoginArgs) -> u8 {
    finish(login_inner(args))
}

fn login_inner(args: &LoginArgs) -> Result<(), AuthError> {
    let name = args.provider.trim();
    if name.is_empty() {
        return Err(AuthError::flow("--provider needs a name"));
    }
    let paths = crate::config::paths().map_err(|e| AuthError::store(e.to_string()))?;
    if let Some(why) = crate::config::unknown_provider(name, &paths.config_file) {
        return Err(AuthError::flow(why));
    }
    let account = args.account.as_deref().map(str::trim);
    if let Some(account) = account {
        check_account(account).map_err(|why| AuthError::flow(format!("--account: {why}")))?;
    }
    let store = Store::open(&home()?);
    if let Some(why) = store.keyring_required_but_missing() {
        return Err(AuthError::store(why));
    }
    let credential = if args.api_key || !ACCOUNT_PROVIDERS.iter().any(|(p, _)| *p == name) {
        if args.device {
            return Err(AuthError::flow(format!(
                "provider `{name}` has no device sign-in; `agent login --provider {name}` asks for an API key"
            )));
        }
        Credential::ApiKey {
            key: read_key(name)?,
        }
    } else {
        let runtime = runtime()?;
        let tokens = runtime.block_on(async {
            match name {
                "chatgpt" if args.device => {
                    super::chatgpt::sign_in_device(
                        super::chatgpt::ISSUER,
                        show_code,
                        tokio::time::sleep,
                    )
                    .await
                }
                "chatgpt" => {
                    super::chatgpt::sign_in_browser(super::chatgpt::ISSUER, open_browser).await
                }
                _ => {
                    copilot::sign_in(
                        &copilot::Endpoints::default(),
                        |code| show_code(&code.verification_uri, &code.user_code),
                        tokio::time::sleep,
                    )
                    .await
                }
            }
        })?;
        Credential::Oauth(tokens)
    };
    let lock = store.lock()?;
    let location = store.save(&lock, &account_id(name, account), &credential)?;
    drop(lock);
    let who = match &credential {
        Credential::Oauth(tokens) => tokens
            .account
            .as_ref()
            .map(|a| format!(" as {a}"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let target = match account {
        Some(account) => format!("`{name}` (account `{account}`)"),
        None => format!("`{name}`"),
    };
    println!("Signed in to {target}{who}; the credential is in {location}.");
    if account.is_none()
        && let Some(var) = key_variable(name)
        && crate::secrets::env_key(var).is_some_and(|v| !v.trim().is_empty())
    {
        println!("Note: {var} is set and is used instead while it is.");
    }
    Ok(())
}

/// The environment variable of a built-in provider, which wins over a stored key.
fn key_variable(provider: &str) -> Option<&'static str> {
    crate::config::BUILTIN_PROVIDERS
        .iter()
        .find(|p| p.name == provider)
        .and_then(|p| p.api_key_env)
}

/// Read a key: without echo from a terminal, else the first line of the input.
fn read_key(provider: &str) -> Result<String, AuthError> {
    let key = if std::io::stdin().is_terminal() {
        eprint!("API key for `{provider}` (not shown): ");
        let _ = std::io::stderr().flush();
        rpassword::read_password()
            .map_err(|e| AuthError::flow(format!("cannot read the key: {e}")))?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| AuthError::flow(format!("cannot read the key: {e}")))?;
        line
    };
    super::interactive::valid_key(&key)
}

fn show_code(url: &str, code: &str) {
    eprintln!("To sign in, open {url} and enter the code {code}");
    eprintln!("Waiting for the sign-in to be approved…");
}

pub(crate) async fn open_browser(url: String) {
    eprintln!(
        "Open this address to sign in (a browser is being started if there is one):\n\n  {url}\n"
    );
    super::interactive::start_browser(url).await
}

pub fn logout(args: &LogoutArgs) -> u8 {
    finish(logout_inner(args))
}

fn logout_inner(args: &LogoutArgs) -> Result<(), AuthError> {
    let store = Store::open(&home()?);
    let lock = store.lock()?;
    let account = args.account.as_deref().map(str::trim);
    let ids: Vec<String> = match &args.provider {
        Some(name) => vec![account_id(name, account)],
        None => store
            .ids()?
            .into_iter()
            .filter(|id| parse_provider_id(id).is_some())
            .collect(),
    };
    let mut removed = Vec::new();
    for id in &ids {
        if store.remove(&lock, id)? {
            removed.push(id.clone());
        }
    }
    match (removed.is_empty(), &args.provider) {
        (true, Some(name)) => println!(
            "No credential was stored for {}.",
            subject(&account_id(name, account))
        ),
        (true, None) => println!("No provider credential was stored."),
        (false, _) => println!(
            "Signed out of {}.",
            removed
                .iter()
                .map(|id| subject(id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    Ok(())
}

/// How a provider credential's id is named to the user: "`openai`", "`openai` (account
/// `work`)".
pub fn subject(id: &str) -> String {
    match parse_provider_id(id) {
        Some((provider, Some(account))) => format!("`{provider}` (account `{account}`)"),
        Some((provider, None)) => format!("`{provider}`"),
        None => format!("`{id}`"),
    }
}

pub fn auth(action: &AuthAction) -> u8 {
    match action {
        AuthAction::Status => finish(status()),
    }
}

fn status() -> Result<(), AuthError> {
    let store = Store::open(&home()?);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "New credentials are stored in {}.", store.describe());
    let mut any = false;
    for id in store.ids()? {
        let Some((credential, location)) = store.load(&id)? else {
            continue;
        };
        any = true;
        let (kind, name) = id.split_once('/').unwrap_or(("", &id));
        let (who, default_account) = match (kind, parse_provider_id(&id)) {
            ("mcp", _) => (format!("MCP server `{name}`"), false),
            (_, Some((provider, Some(account)))) => {
                (format!("provider `{provider}` account `{account}`"), false)
            }
            _ => (format!("provider `{name}`"), true),
        };
        let _ = writeln!(out, "{who}: {}, in {location}", credential.describe());
        if default_account
            && let Some(var) = key_variable(name)
            && crate::secrets::env_key(var).is_some_and(|v| !v.trim().is_empty())
        {
            let _ = writeln!(out, "  ({var} is set and is used instead)");
        }
    }
    if !any {
        let _ = writeln!(
            out,
            "Nobody is signed in. Sign in with: agent login --provider NAME ({})",
            ACCOUNT_PROVIDERS
                .iter()
                .map(|(name, what)| format!("{name}: {what}"))
                .chain(["any other provider: an API key".to_string()])
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}
