//! Network by host (`[sandbox] allow_hosts`, docs/security.md): sandboxed commands reach
//! the named hosts — and nothing else — through an HTTP proxy the agent runs.
//!
//! How the pieces fit, for one command (Linux):
//!
//! 1. The agent makes a unix socket pair (`Channel`) and gives one end to the command's
//!    supervisor (an inherited descriptor, `--egress FD`).
//! 2. Between fork and exec, the command gets a network namespace of its own with only
//!    `lo`, and a listener on `127.0.0.1:3128` in it, sent back over the channel
//!    (`sandbox::linux::netns`). The proxy variables (`command_env`) point there.
//! 3. Once the command runs, the agent receives the listener and serves it
//!    (`Channel::serve`, `proxy`): every connection the command makes to its proxy is
//!    accepted by the agent itself, judged against `allow_hosts` (`hosts`), and either
//!    refused with a `403` naming the host and the key, or connected from the agent's own
//!    network. Refusals are kept for the command's result (`Refusals`, `explain`).
//!
//! Nothing starts until a command with `allow_hosts` does, and everything one command's
//! proxy runs (its listener, its connections, their tunnels) ends when the command's
//! supervisor is done with (`Session` is dropped). No path names the proxy: only the
//! command's own namespace reaches it, so no other process — another user's, another
//! command's — can use it or see its traffic, and the proxy knows whose refusals it records.

pub mod hosts;
mod proxy;
mod resolve;

#[doc(hidden)]
pub use resolve::testing;

pub use hosts::Pattern;

use super::diagnose::Blocked;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// Where the command finds the proxy (its own loopback; see `linux::netns::PROXY_PORT`).
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// What never goes through the proxy: the command's own loopback (a server it started
/// itself answers there, inside its namespace).
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The environment a command under `allow_hosts` gets: the proxy variables in both cases
/// (curl reads only the lower-case `http_proxy`), and Node's switch to honour them.
pub fn command_env() -> Vec<(&'static str, &'static str)> {
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        env.push((name, PROXY_URL));
    }
    env.push(("NO_PROXY", NO_PROXY));
    env.push(("no_proxy", NO_PROXY));
    env.push(("NODE_USE_ENV_PROXY", "1"));
    env
}

/// Why the proxy refused a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No entry names the host.
    NotListed,
    /// Entries name the host, for these ports only.
    Port(Vec<hosts::Ports>),
    /// Only a wildcard names the host, and it resolves to an address of this machine or its
    /// link (this one).
    Local(IpAddr),
}

/// One refused connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    pub reason: Reason,
}

impl Refusal {
    /// `host example.com is not in [sandbox] allow_hosts` (plain ASCII: it is also the
    /// reason phrase of the proxy's 403).
    pub fn message(&self) -> String {
        let host = &self.host;
        match &self.reason {
            Reason::NotListed => format!("host {host} is not in [sandbox] allow_hosts"),
            Reason::Port(ports) => {
                let allowed: Vec<String> = ports.iter().map(ToString::to_string).collect();
                format!(
                    "port {} of host {host} is not in [sandbox] allow_hosts (only {})",
                    self.port,
                    allowed.join(", ")
                )
            }
            Reason::Local(ip) => format!(
                "host {host} resolves to {ip}, an address of this machine, which a wildcard \
                 in [sandbox] allow_hosts does not reach"
            ),
        }
    }
}

impl Reason {
    /// What to write in the config to allow it.
    fn remedy(&self, host: &str, port: u16) -> String {
        let entry = match (self, port) {
            (Reason::NotListed | Reason::Local(_), 80 | 443) => host.to_string(),
            _ if host.contains(':') => format!("[{host}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        format!("add \"{entry}\" to allow_hosts under [sandbox] in config.toml")
    }
}

/// The refusals of one command's proxy, in order, each host and port once.
#[derive(Clone, Debug, Default)]
pub struct Refusals(Arc<Mutex<Vec<Refusal>>>);

/// Refusals kept per command at most.
const MAX_REFUSALS: usize = 32;

impl Refusals {
    fn record(&self, refusal: Refusal) {
        let mut list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = list
            .iter()
            .any(|r| r.host == refusal.host && r.port == refusal.port);
        if !seen && list.len() < MAX_REFUSALS {
            list.push(refusal);
        }
    }

    pub fn list(&self) -> Vec<Refusal> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The note for a command whose connections the proxy refused: `network: host example.com
/// is not in [sandbox] allow_hosts`, and what to add.
pub fn explain(refusals: &[Refusal]) -> Option<Blocked> {
    let first = refusals.first()?;
    let mut boundary = format!("network: {}", first.message());
    if refusals.len() > 1 {
        let others: Vec<String> = refusals[1..]
            .iter()
            .take(4)
            .map(|r| format!("{}:{}", r.host, r.port))
            .collect();
        boundary.push_str(&format!(" (also refused: {})", others.join(", ")));
    }
    let remedy = format!(
        "Sandboxed commands reach only the hosts of [sandbox] allow_hosts, through the \
         agent's proxy: {} (a host alone allows ports 80 and 443; `host:PORT` another \
         port), set `network = true` under [sandbox] for the whole network, or run the agent \
         with `--sandbox off`.",
        first.reason.remedy(&first.host, first.port)
    );
    Some(Blocked { boundary, remedy })
}

/// The note for a network error of a command under `allow_hosts` that the proxy did not
/// refuse: the program went around it (resolved a name, connected directly, used UDP).
pub fn unproxied() -> Blocked {
    Blocked {
        boundary: "network: only [sandbox] allow_hosts, through the agent's proxy".to_string(),
        remedy: "Sandboxed commands reach the network only through the agent's egress proxy \
                 (HTTP_PROXY and HTTPS_PROXY are set for them), and only the hosts of \
                 [sandbox] allow_hosts; this program resolved a name or connected without it. \
                 Use a client that honours the proxy variables, set `network = true` under \
                 [sandbox] for the whole network, or run the agent with `--sandbox off`."
            .to_string(),
    }
}

/// In the supervisor, for a command about to start under `policy`: with `allow_hosts`, the
/// sandbox sends the proxy's listener over `socket` (the supervisor's end of `Channel`) and
/// the command gets the proxy variables. Without a socket the command still gets its
/// namespace, with no way out.
#[cfg(target_os = "linux")]
pub fn bridge(
    policy: &super::Policy,
    command: &mut std::process::Command,
    prepared: &mut super::linux::Prepared,
    socket: Option<&std::os::fd::OwnedFd>,
) {
    use std::os::fd::AsRawFd;
    if !policy.egress_bridge() {
        return;
    }
    if let Some(socket) = socket {
        prepared.send_listener_to(socket.as_raw_fd());
        command.envs(command_env());
    }
}

/// The unix socket pair over which a command's listener reaches the agent.
#[cfg(target_os = "linux")]
pub struct Channel {
    agent: std::os::fd::OwnedFd,
    supervisor: Option<std::os::fd::OwnedFd>,
}

#[cfg(target_os = "linux")]
impl Channel {
    pub fn new() -> std::io::Result<Channel> {
        let (agent, supervisor) = std::os::unix::net::UnixStream::pair()?;
        Ok(Channel {
            agent: agent.into(),
            supervisor: Some(supervisor.into()),
        })
    }

    /// The descriptor the supervisor inherits (close-on-exec: the supervisor's start
    /// must clear that flag in its child, `keep_in_child`).
    pub fn supervisor_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.supervisor.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// For the supervisor's `pre_exec`: let `fd` survive the exec. System calls only.
    pub fn keep_in_child(fd: std::os::fd::RawFd) -> std::io::Result<()> {
        // SAFETY: fcntl on a descriptor number; a bad one fails with EBADF.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Once the supervisor runs: the agent's copy of its end goes.
    pub fn close_supervisor_end(&mut self) {
        self.supervisor = None;
    }

    /// Once the command runs: receive its listener and serve it with `allow`, on the
    /// current tokio runtime, until the returned session is dropped.
    pub fn serve(self, allow: &[Pattern]) -> std::io::Result<Session> {
        use std::os::fd::AsFd;
        let listener = super::linux::netns::receive_listener(self.agent.as_fd())?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let refusals = Refusals::default();
        let stop = tokio_util::sync::CancellationToken::new();
        let proxy = Arc::new(proxy::Proxy {
            allow: allow.to_vec(),
            refusals: refusals.clone(),
            stop: stop.clone(),
        });
        crate::tasks::spawn(proxy::serve(listener, proxy));
        Ok(Session {
            refusals,
            _stop: stop.drop_guard(),
        })
    }
}

/// One command's proxy, running until dropped.
pub struct Session {
    refusals: Refusals,
    _stop: tokio_util::sync::DropGuard,
}

impl Session {
    /// The refusals so far (a handle that outlives the session).
    pub fn refusals(&self) -> Refusals {
        self.refusals.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_host_and_the_key() {
        let refused = Refusal {
            host: "example.com".to_string(),
            port: 443,
            reason: Reason::NotListed,
        };
        let blocked = explain(std::slice::from_ref(&refused)).unwrap();
        assert_eq!(
            blocked.boundary,
            "network: host example.com is not in [sandbox] allow_hosts"
        );
        assert!(
            blocked
                .remedy
                .contains("add \"example.com\" to allow_hosts under [sandbox]"),
            "{}",
            blocked.remedy
        );
        let port = Refusal {
            host: "pypi.org".to_string(),
            port: 8080,
            reason: Reason::Port(vec![hosts::Ports::Web]),
        };
        assert_eq!(
            port.message(),
            "port 8080 of host pypi.org is not in [sandbox] allow_hosts (only 80 and 443)"
        );
        let both = explain(&[refused, port]).unwrap();
        assert!(both.boundary.ends_with("(also refused: pypi.org:8080)"));
        assert_eq!(explain(&[]), None);
    }
}
