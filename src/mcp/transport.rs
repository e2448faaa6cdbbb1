//! Opening the wire to a server. A stdio server is a child in its own process group (so
//! ending it ends everything it started, and the terminal's Ctrl+C never reaches it), with
//! the providers' API keys taken out of its environment, its stderr read line by line into
//! the log (and the last lines kept, to explain a failure), and `PR_SET_PDEATHSIG` set so it
//! dies with the agent even when the agent is killed; with `sandbox = true` it runs inside
//! the command sandbox (`[sandbox]`'s policy, applied between fork and exec). An HTTP server
//! gets our own reqwest client (reading answers bounded: `http`), its headers and bearer token.

use super::config::Transport;
use super::http::BoundedHttp;
use super::http_client::McpHttp;
use super::stdio::StdioTransport;
use crate::sandbox::{Policy, Sandbox, Status};
pub use crate::tools::process::server_child::StderrTail;
use crate::tools::process::server_child::{die_with_agent, read_stderr};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::HashMap;
use std::path::PathBuf;

/// What every server is started with.
#[derive(Clone)]
pub struct SpawnEnv {
    /// Where stdio servers run unless their `cwd` says otherwise.
    pub cwd: PathBuf,
    /// Environment variables servers never see (the providers' API keys) unless their own
    /// `env` sets them.
    pub hidden_env: Vec<String>,
    /// Shared by every HTTP server.
    pub http: reqwest::Client,
    /// What stdio servers with `sandbox = true` run inside.
    pub sandbox: Sandbox,
}

impl SpawnEnv {
    pub fn new(
        cwd: PathBuf,
        hidden_env: Vec<String>,
        sandbox: Sandbox,
    ) -> Result<SpawnEnv, String> {
        crate::llm::client::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            // No overall timeout: the event stream of a session is long-lived.
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot set up HTTP for MCP servers: {e}"))?;
        Ok(SpawnEnv {
            cwd,
            hidden_env,
            http,
            sandbox,
        })
    }
}

/// The stderr lines of a stdio server kept for its error messages.
pub const TAIL_LINES: usize = 12;

/// A transport ready to be served, and what we keep of it.
pub enum Opened {
    Stdio {
        transport: StdioTransport,
        /// The child's process group.
        group: Option<i32>,
    },
    /// For a server signed in to with `agent mcp login`, rmcp's client adds (and renews)
    /// the token kept for it (`auth::mcp`, `McpHttp::SignedIn`).
    Http(StreamableHttpClientTransport<McpHttp>),
}

/// Open the transport of `server`; stderr of a stdio server goes to `tail` and the log.
pub fn open(
    server: &str,
    transport: &Transport,
    env: &SpawnEnv,
    tail: &StderrTail,
    signed_in: Option<AuthorizationManager>,
) -> Result<Opened, String> {
    match transport {
        Transport::Stdio {
            command,
            args,
            env: extra,
            cwd,
            sandbox,
        } => {
            let dir = match cwd {
                Some(dir) => env.cwd.join(dir),
                None => env.cwd.clone(),
            };
            let policy = if *sandbox {
                sandbox_policy(&env.sandbox, &dir)?
            } else {
                None
            };
            let mut cmd = new_command(command, args, policy.as_ref());
            for hidden in &env.hidden_env {
                if !extra.contains_key(hidden) {
                    cmd.env_remove(hidden);
                }
            }
            cmd.envs(extra);
            cmd.current_dir(&dir);
            die_with_agent(&mut cmd);
            if let Some(policy) = &policy {
                confine(&mut cmd, policy)?;
            }
            let mut wrapped = CommandWrap::from(cmd);
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            let (transport, stderr, pid) =
                StdioTransport::spawn(server, wrapped).map_err(|e| match policy {
                    Some(_) if e.kind() != std::io::ErrorKind::NotFound => {
                        format!("cannot start `{command}` inside the sandbox: {e}")
                    }
                    _ => spawn_error(command, &dir, &e),
                })?;
            let group = pid.and_then(|pid| i32::try_from(pid).ok());
            if let Some(stderr) = stderr {
                crate::tasks::spawn(read_stderr(
                    server.to_string(),
                    stderr,
                    tail.clone(),
                    |server, line| tracing::info!(target: "mcp", server, stderr = line),
                ));
            }
            Ok(Opened::Stdio { transport, group })
        }
        Transport::Http {
            url,
            bearer_token_env,
            headers,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env {
                let token = std::env::var(var)
                    .ok()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| {
                        format!("the environment variable {var} (bearer_token_env) is not set")
                    })?;
                config = config.auth_header(token);
            }
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("`{name}` is not a valid header name"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| format!("the value of header `{name}` is not valid"))?;
                custom.insert(name, value);
            }
            config = config.custom_headers(custom);
            let http = BoundedHttp::new(env.http.clone(), server);
            let client = match signed_in {
                Some(manager) => McpHttp::SignedIn(AuthClient::new(http, manager)),
                None => McpHttp::Plain(http),
            };
            Ok(Opened::Http(StreamableHttpClientTransport::with_client(
                client, config,
            )))
        }
    }
}

fn spawn_error(command: &str, dir: &std::path::Path, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound if !dir.is_dir() => {
            format!(
                "cannot run `{command}`: its working directory {} does not exist",
                dir.display()
            )
        }
        std::io::ErrorKind::NotFound => {
            format!("cannot run `{command}`: no such program (is it installed and on PATH?)")
        }
        _ => format!("cannot run `{command}`: {error}"),
    }
}

/// The policy a server with `sandbox = true` runs under: `None` when the user turned the
/// sandbox off (`--sandbox off` runs everything unsandboxed), an error when this machine
/// cannot enforce it — such a server is never started unsandboxed behind the user's back.
fn sandbox_policy(sandbox: &Sandbox, cwd: &std::path::Path) -> Result<Option<Policy>, String> {
    match (&sandbox.status, &sandbox.policy) {
        (Status::Off, _) => Ok(None),
        (Status::Enforced, Some(_)) => Ok(sandbox.command_policy(cwd)),
        (Status::Unavailable(reason), _) => Err(format!(
            "it is to run inside the sandbox (`sandbox = true`), which is unavailable here: \
             {reason}; `sandbox = false` in its table runs it unsandboxed"
        )),
        (Status::Enforced, None) => Err("the sandbox has no policy".to_string()),
    }
}

/// The server's command: on macOS a sandboxed one runs through `sandbox-exec` with the
/// Seatbelt profile of `policy`.
fn new_command(command: &str, args: &[String], policy: Option<&Policy>) -> tokio::process::Command {
    #[cfg(target_os = "macos")]
    if let Some(policy) = policy {
        let mut argv = vec![std::ffi::OsString::from(command)];
        argv.extend(args.iter().map(std::ffi::OsString::from));
        let mut wrapped = crate::sandbox::seatbelt::wrap(policy, &argv).into_iter();
        let mut cmd = tokio::process::Command::new(wrapped.next().unwrap_or_default());
        cmd.args(wrapped);
        return cmd;
    }
    #[cfg(not(target_os = "macos"))]
    let _ = policy;
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args);
    cmd
}

/// Apply `policy` to the server between fork and exec (Landlock, the seccomp filter, the
/// read-only `.git` paths), so everything it starts inherits it.
#[cfg(target_os = "linux")]
fn confine(cmd: &mut tokio::process::Command, policy: &Policy) -> Result<(), String> {
    let mut prepared = crate::sandbox::linux::Prepared::new(policy)
        .map_err(|e| format!("the sandbox could not be set up for it: {e}"))?;
    // SAFETY: `apply_in_child` only makes system calls on memory prepared here.
    unsafe {
        cmd.pre_exec(move || prepared.apply_in_child());
    }
    Ok(())
}

/// On macOS `new_command` already wrapped the command in `sandbox-exec`.
#[cfg(target_os = "macos")]
fn confine(_cmd: &mut tokio::process::Command, _policy: &Policy) -> Result<(), String> {
    Ok(())
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn confine(_cmd: &mut tokio::process::Command, _policy: &Policy) -> Result<(), String> {
    Err("this operating system has no sandbox the agent knows how to use".to_string())
}

/// Signal a stdio server's whole process group.
pub fn signal_group(group: i32, signal: i32) {
    if group > 1 {
        // SAFETY: killpg has no memory-safety preconditions; a stale group fails with ESRCH.
        unsafe {
            libc::killpg(group, signal);
        }
    }
}

/// Whether anything is left of a process group.
pub fn group_alive(group: i32) -> bool {
    // SAFETY: as above; signal 0 only checks.
    group > 1 && unsafe { libc::killpg(group, 0) } == 0
}
