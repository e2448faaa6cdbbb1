//! A session's loopback-only network namespace (`[sandbox] allow_local_binding`), made the
//! first time one of its sandboxed commands needs it and kept until the session ends: the
//! agent holds the namespace's descriptors, which keep it alive, and hands them to each
//! command's supervisor (`crate::sandbox::linux::session_net` has the system calls).
//!
//! The namespace is made by the supervisor program (`supervisor::MAKE_NET_FLAG`), not by
//! the agent: the agent runs many threads (a user namespace needs a single-threaded
//! process), and whoever joins a namespace later must hold the rights its maker had — the
//! supervisor that starts each command is that same program as that same user.

use std::path::Path;

/// One session's namespace, made on first use; `Default` makes none yet.
#[derive(Debug, Default)]
pub struct SessionNet {
    #[cfg(target_os = "linux")]
    made: tokio::sync::OnceCell<Result<crate::sandbox::linux::session_net::Handles, String>>,
}

/// Whether a session's namespace is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetState {
    /// No command needed it yet.
    NotYetMade,
    Made,
    /// It could not be made (why): commands keep the unix-only filter.
    Unavailable(String),
}

impl SessionNet {
    /// The namespace, made with the supervisor program `supervisor` if it is not there yet;
    /// why it cannot be, once and for all.
    #[cfg(target_os = "linux")]
    pub async fn handles(
        &self,
        supervisor: &Path,
    ) -> Result<&crate::sandbox::linux::session_net::Handles, String> {
        self.made
            .get_or_init(|| make(supervisor))
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    pub fn state(&self) -> NetState {
        #[cfg(target_os = "linux")]
        match self.made.get() {
            None => NetState::NotYetMade,
            Some(Ok(_)) => NetState::Made,
            Some(Err(why)) => NetState::Unavailable(why.clone()),
        }
        #[cfg(not(target_os = "linux"))]
        NetState::Unavailable("only Linux has network namespaces".to_string())
    }
}

/// Run the supervisor program as the namespace's maker and receive what it sent.
#[cfg(target_os = "linux")]
async fn make(supervisor: &Path) -> Result<crate::sandbox::linux::session_net::Handles, String> {
    use std::os::fd::{AsFd, AsRawFd};
    let failed =
        |e: std::io::Error| format!("cannot make the session's loopback network namespace: {e}");
    let (agent, maker) = std::os::unix::net::UnixStream::pair().map_err(failed)?;
    let fd = maker.as_raw_fd();
    let mut command = tokio::process::Command::new(supervisor);
    command
        .arg(super::supervisor::FLAG)
        .arg(super::supervisor::MAKE_NET_FLAG)
        .arg(fd.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: `keep_in_child` makes one fcntl call, allowed between fork and exec.
    unsafe {
        command.pre_exec(move || crate::sandbox::egress::Channel::keep_in_child(fd));
    }
    let child = command.spawn().map_err(failed)?;
    drop(command);
    drop(maker);
    let output = child.wait_with_output().await.map_err(failed)?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(if why.is_empty() {
            format!(
                "cannot make the session's loopback network namespace ({})",
                output.status
            )
        } else {
            why
        });
    }
    crate::sandbox::linux::session_net::receive(agent.as_fd()).map_err(failed)
}
