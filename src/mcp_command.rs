//! `agent mcp list | add NAME -- COMMAND ARGS… | add NAME --url URL | remove NAME`: the
//! user's MCP servers in config.toml, listed or edited without opening the file (comments
//! and layout kept, `config::mcp_edit`). The file is replaced atomically and keeps its mode.

use crate::cli::{McpAction, McpArgs};
use crate::config::mcp_edit::{self, NewServer};
use crate::mcp::config::Transport;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Run the subcommand; the exit code (0 done, 1 failed, 2 usage).
pub fn run(args: &McpArgs, config: Option<&Path>) -> u8 {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None => match crate::config::paths() {
            Ok(paths) => paths.config_file,
            Err(e) => {
                eprintln!("agent: {e}");
                return 1;
            }
        },
    };
    let result = match &args.action {
        McpAction::List => list(&path),
        McpAction::Add {
            name,
            url,
            env,
            bearer_token_env,
            command,
        } => parse_env(env).and_then(|env| {
            let server = NewServer {
                name: name.clone(),
                command: command.clone(),
                url: url.clone(),
                env,
                bearer_token_env: bearer_token_env.clone(),
            };
            edit(&path, |text| mcp_edit::add(text, &server))?;
            println!("Added MCP server `{name}` to {}.", path.display());
            Ok(())
        }),
        McpAction::Remove { name } => edit(&path, |text| mcp_edit::remove(text, name)).map(|()| {
            println!("Removed MCP server `{name}` from {}.", path.display());
        }),
        McpAction::Login { name } => login(&path, name),
        McpAction::Logout { name } => logout(name),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agent: {e}");
            1
        }
    }
}

fn parse_env(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(format!("--env takes KEY=VALUE, not `{pair}`")),
        })
        .collect()
}

fn read(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn list(path: &Path) -> Result<(), String> {
    let text = read(path)?;
    let servers =
        mcp_edit::list(&text).map_err(|e| format!("config error in {}: {e}", path.display()))?;
    if servers.is_empty() {
        println!(
            "No MCP servers in {}. Add one with: agent mcp add NAME -- COMMAND ARGS…  or  agent mcp add NAME --url URL",
            path.display()
        );
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for (name, table) in servers {
        let line = match table.resolve(&name) {
            Ok(server) => {
                let target = match &server.transport {
                    Transport::Stdio { command, args, .. } => {
                        let mut words = vec![command.clone()];
                        words.extend(args.iter().cloned());
                        format!("stdio  {}", words.join(" "))
                    }
                    Transport::Http { url, .. } => format!("http   {url}"),
                };
                let state = if server.enabled { "" } else { "  (disabled)" };
                format!("{name}  {target}{state}")
            }
            Err(e) => format!("{name}  invalid: `{}`: {}", e.key, e.message),
        };
        let _ = writeln!(out, "{line}");
    }
    Ok(())
}

/// Read the config, change it, write it back in one step (a temporary file renamed over it,
/// with the old file's permissions; through a symlink, over the file it points to).
pub fn edit(
    path: &Path,
    change: impl FnOnce(&str) -> Result<String, String>,
) -> Result<(), String> {
    // A config file that is a symlink (dotfile managers) stays one: its target is replaced.
    let resolved = std::fs::canonicalize(path).ok();
    let path = resolved.as_deref().unwrap_or(path);
    let text = read(path)?;
    let edited = change(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut file = tempfile::Builder::new()
        .prefix(".config.toml.")
        .tempfile_in(&dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    file.write_all(edited.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if let Ok(metadata) = std::fs::metadata(path) {
        let _ = file.as_file().set_permissions(metadata.permissions());
    }
    file.persist(path)
        .map_err(|e| format!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
}

/// `agent mcp login NAME`: the server's OAuth sign-in (`auth::mcp`).
fn login(path: &Path, name: &str) -> Result<(), String> {
    let text = read(path)?;
    let servers =
        mcp_edit::list(&text).map_err(|e| format!("config error in {}: {e}", path.display()))?;
    let (_, table) = servers
        .into_iter()
        .find(|(server, _)| server == name)
        .ok_or_else(|| format!("no MCP server `{name}` in {}", path.display()))?;
    let server = table
        .resolve(name)
        .map_err(|e| format!("`{}`: {}", e.key, e.message))?;
    let client_id = table.oauth_client_id.clone();
    let Transport::Http { url, .. } = &server.transport else {
        return Err(format!(
            "MCP server `{name}` runs as a local command: only streamable-HTTP servers sign in"
        ));
    };
    #[cfg(not(feature = "mcp"))]
    {
        let _ = (url, client_id);
        Err(crate::features::MCP.missing())
    }
    #[cfg(feature = "mcp")]
    sign_in(name, url.as_str(), client_id.as_deref())
}

/// The OAuth sign-in itself, with the tokens kept in the credential store.
#[cfg(feature = "mcp")]
fn sign_in(name: &str, url: &str, client_id: Option<&str>) -> Result<(), String> {
    let home = crate::config::paths().map_err(|e| e.to_string())?.home;
    let store = std::sync::Arc::new(crate::auth::store::Store::open(&home));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(crate::auth::mcp::login(
            store.clone(),
            name,
            url,
            client_id,
            crate::auth::command::open_browser,
        ))
        .map_err(|e| e.to_string())?;
    println!(
        "Signed in to MCP server `{name}`; the tokens are in {}.",
        store.describe()
    );
    Ok(())
}

/// `agent mcp logout NAME`.
fn logout(name: &str) -> Result<(), String> {
    let home = crate::config::paths().map_err(|e| e.to_string())?.home;
    let store = crate::auth::store::Store::open(&home);
    let lock = store.lock().map_err(|e| e.to_string())?;
    if store
        .remove(&lock, &crate::auth::store::mcp_id(name))
        .map_err(|e| e.to_string())?
    {
        println!("Signed out of MCP server `{name}`.");
    } else {
        println!("No sign-in was stored for MCP server `{name}`.");
    }
    Ok(())
}
