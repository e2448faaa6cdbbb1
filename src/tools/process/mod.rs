//! Running a command so that nothing it starts outlives what the agent means it to: each
//! command runs below its own supervisor process (`supervisor`), which finds every process
//! below it in `/proc` (`tree`) — whatever process group or session they moved to — kills
//! them all on request or when the agent goes away, and reports what it did (`report`), so
//! the model is told the truth about what was killed and what was left running.
//!
//! A cgroup would group the processes too, but needs a writable (delegated) cgroup v2
//! hierarchy, which many machines (containers, cgroup v1 hosts) do not give; the subreaper
//! sees the same tree everywhere Linux runs, so it is the one mechanism used.

mod events;
#[cfg(target_os = "linux")]
pub mod forkserver;
pub mod report;
pub mod server_child;
pub mod session_net;
pub mod supervisor;
pub mod tree;

use crate::sandbox::Policy;
use report::{Line, Outcome};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::process::Child;

/// The agent's end of a supervisor's stdin (its control pipe).
type Control = Box<dyn AsyncWrite + Send + Unpin>;
/// The agent's end of a supervisor's stdout (its report).
type Report = Lines<BufReader<Box<dyn AsyncRead + Send + Unpin>>>;

/// The program that supervises commands unless configured otherwise: this very binary.
pub const DEFAULT_SUPERVISOR: &str = "/proc/self/exe";

/// How long a supervisor may take to report after a kill before it is given up on.
const REPORT_WAIT: Duration = Duration::from_secs(5);

/// How the command's main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// A command running below its supervisor. Dropping it kills the command and everything
/// it started (the supervisor sees its input end).
pub struct Supervised {
    supervisor: Handle,
    control: Option<Control>,
    report: Report,
    /// The command's process id (also its process group id).
    pub pid: i32,
    exit: Option<Exit>,
    /// With `[sandbox] allow_hosts`: the command's egress proxy, served until this is dropped.
    egress: Option<crate::sandbox::egress::Session>,
}

/// The supervisor process, as the agent holds it.
enum Handle {
    /// Started by the agent (its child).
    Child(Child),
    /// Forked by the fork server: its pidfd.
    #[cfg(target_os = "linux")]
    Forked(tokio::io::unix::AsyncFd<OwnedFd>),
}

impl Handle {
    /// Wait until the supervisor has ended.
    async fn wait(&mut self) -> String {
        match self {
            Handle::Child(child) => child
                .wait()
                .await
                .map_or_else(|e| e.to_string(), |s| s.to_string()),
            // A pidfd reads as ready once its process has ended.
            #[cfg(target_os = "linux")]
            Handle::Forked(pidfd) => match pidfd.readable().await {
                Ok(mut ready) => {
                    ready.retain_ready();
                    "it ended".to_string()
                }
                Err(e) => e.to_string(),
            },
        }
    }

    fn start_kill(&mut self) {
        match self {
            Handle::Child(child) => {
                let _ = child.start_kill();
            }
            #[cfg(target_os = "linux")]
            Handle::Forked(pidfd) => {
                let _ = rustix::process::pidfd_send_signal(
                    pidfd.get_ref(),
                    rustix::process::Signal::KILL,
                );
            }
        }
    }
}

/// Where a command runs and what it sees of the agent's environment.
pub struct CommandEnv<'a> {
    pub cwd: &'a Path,
    /// Variables set for the command.
    pub set: &'a [(&'a str, &'a str)],
    /// Variables removed from what the command sees (the providers' keys).
    pub hidden: &'a [String],
    /// The session's loopback network namespace, joined when the policy allows local
    /// binding (`[sandbox] allow_local_binding`); `None`: none to join.
    pub session_net: Option<&'a session_net::SessionNet>,
}

/// Start `argv` below a supervisor, as `start` does with this binary as the supervisor
/// program, in the working directory and environment `env` says. The supervisor is forked
/// by the fork server when there is one (`forkserver`: no program started again per
/// command), and started from `supervisor` otherwise.
pub async fn start_command(
    supervisor: &Path,
    argv: &[&OsStr],
    sandbox: Option<&Policy>,
    output: OwnedFd,
    env: CommandEnv<'_>,
) -> std::io::Result<Supervised> {
    // With local binding, the session's namespace (made now if this is its first command;
    // where it cannot be made, the command keeps the unix-only filter and the result's
    // diagnosis says why a listener failed).
    #[cfg(target_os = "linux")]
    let net = match (sandbox, env.session_net) {
        (Some(policy), Some(session_net)) if policy.local_binding => {
            session_net.handles(supervisor).await.ok()
        }
        _ => None,
    };
    // A command with an egress proxy hands its supervisor one more descriptor (the channel
    // its proxy listener comes back over), which the fork server does not pass: such a
    // supervisor is started from the binary. The session's namespace it does pass.
    #[cfg(target_os = "linux")]
    if supervisor == Path::new(DEFAULT_SUPERVISOR)
        && !sandbox.is_some_and(Policy::egress_bridge)
        && forkserver::running()
    {
        match start_forked(argv, sandbox, net, &output, &env).await {
            Err(ForkedStart::NotRunning) => {}
            Err(ForkedStart::Failed(error)) => return Err(error),
            Ok(started) => return started.await,
        }
    }
    #[cfg(not(target_os = "linux"))]
    let net = None;
    start_with(supervisor, argv, sandbox, net, output, |command| {
        command.current_dir(env.cwd);
        for (name, value) in env.set {
            command.env(name, value);
        }
        for name in env.hidden {
            command.env_remove(name);
        }
    })
    .await
}

#[cfg(target_os = "linux")]
enum ForkedStart {
    NotRunning,
    Failed(std::io::Error),
}

/// Ask the fork server for a supervisor; once it is forked, what is left is reading its
/// first report line (the returned future).
#[cfg(target_os = "linux")]
async fn start_forked(
    argv: &[&OsStr],
    sandbox: Option<&Policy>,
    net: NetHandles<'_>,
    output: &OwnedFd,
    env: &CommandEnv<'_>,
) -> Result<impl std::future::Future<Output = std::io::Result<Supervised>>, ForkedStart> {
    use std::ffi::OsString;
    let failed = |e: std::io::Error| ForkedStart::Failed(e);
    let sandbox = match sandbox {
        Some(policy) => Some(
            serde_json::to_string(policy)
                .map_err(std::io::Error::other)
                .map_err(failed)?,
        ),
        None => None,
    };
    let mut variables: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            !env.hidden.iter().any(|hidden| OsStr::new(hidden) == name)
                && !env.set.iter().any(|(set, _)| OsStr::new(set) == name)
        })
        .collect();
    variables.extend(env.set.iter().map(|(n, v)| (n.into(), v.into())));
    let request = forkserver::Request {
        cwd: env.cwd.as_os_str().to_owned(),
        env: variables,
        sandbox,
        argv: argv.iter().map(|a| a.to_os_string()).collect(),
    };
    let (control_read, control_write) = std::io::pipe().map_err(failed)?;
    let (report_read, report_write) = std::io::pipe().map_err(failed)?;
    let output = output.try_clone().map_err(failed)?;
    // The namespace's descriptors, in the order the server expects: network, then user.
    let mut net_fds = Vec::new();
    if let Some(handles) = net.filter(|_| request.sandbox.is_some()) {
        net_fds.push(handles.net.try_clone().map_err(failed)?);
        if let Some(user) = &handles.user {
            net_fds.push(user.try_clone().map_err(failed)?);
        }
    }
    let forked = crate::tasks::spawn_blocking(move || {
        use std::os::fd::AsFd;
        let net: Vec<_> = net_fds.iter().map(AsFd::as_fd).collect();
        let forked = forkserver::spawn(
            &request,
            control_read.as_fd(),
            report_write.as_fd(),
            output.as_fd(),
            &net,
        );
        // Our copies of the supervisor's ends close here: its stdin ends when the agent's
        // end does, its report when the supervisor's does.
        drop((control_read, report_write, output));
        forked
    })
    .await
    .map_err(|e| failed(std::io::Error::other(e.to_string())))?;
    let forked = match forked {
        Ok(forked) => forked,
        Err(forkserver::SpawnError::NotRunning) => return Err(ForkedStart::NotRunning),
        Err(forkserver::SpawnError::Failed(e)) => {
            return Err(failed(std::io::Error::new(
                e.kind(),
                format!("cannot start a supervisor: {e}"),
            )));
        }
    };
    // SAFETY: an OwnedFd's descriptor is open and stays the same until it is dropped,
    // which only the AsyncFd does.
    let pidfd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(
            forked.pidfd,
            tokio::io::Interest::READABLE,
        )
    }
    .map_err(|e| failed(e.into_parts().1))?;
    let control = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(control_write))
        .map_err(failed)?;
    let report = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(report_read))
        .map_err(failed)?;
    Ok(started(
        Handle::Forked(pidfd),
        Box::new(control),
        Box::new(report),
    ))
}

/// Start `argv` below the supervisor program `supervisor`, with stdout and stderr into
/// `output`, inside the sandbox `sandbox` when one is given. `configure` sets the working
/// directory and environment (the supervisor's, which the command inherits).
pub async fn start(
    supervisor: &Path,
    argv: &[&OsStr],
    sandbox: Option<&Policy>,
    output: OwnedFd,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> std::io::Result<Supervised> {
    start_with(supervisor, argv, sandbox, None, output, configure).await
}

/// The session's namespace as a command's start sees it.
#[cfg(target_os = "linux")]
type NetHandles<'a> = Option<&'a crate::sandbox::linux::session_net::Handles>;
#[cfg(not(target_os = "linux"))]
type NetHandles<'a> = Option<&'a ()>;

/// `start`, joining the session's namespace `net` when the policy allows local binding.
async fn start_with(
    supervisor: &Path,
    argv: &[&OsStr],
    sandbox: Option<&Policy>,
    net: NetHandles<'_>,
    output: OwnedFd,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> std::io::Result<Supervised> {
    let mut command = tokio::process::Command::new(supervisor);
    command.arg(supervisor::FLAG);
    let mut egress = egress_channel(sandbox)?;
    if let Some(policy) = sandbox {
        let json = serde_json::to_string(policy).map_err(std::io::Error::other)?;
        command.arg(supervisor::SANDBOX_FLAG).arg(json);
        #[cfg(target_os = "linux")]
        if let Some(fd) = egress.as_ref().and_then(|c| c.supervisor_fd()) {
            command.arg(supervisor::EGRESS_FLAG).arg(fd.to_string());
            // SAFETY: `keep_in_child` makes one fcntl call, allowed between fork and exec.
            unsafe {
                command.pre_exec(move || crate::sandbox::egress::Channel::keep_in_child(fd));
            }
        }
        #[cfg(target_os = "linux")]
        if let Some(handles) = net.filter(|_| policy.local_binding) {
            command
                .arg(supervisor::SESSION_NET_FLAG)
                .arg(handles.argument());
            let fds = handles.raw();
            // SAFETY: `keep_in_child` makes fcntl calls only, allowed between fork and exec
            // (the vector was allocated before the fork and is only read).
            unsafe {
                command.pre_exec(move || {
                    for fd in &fds {
                        crate::sandbox::egress::Channel::keep_in_child(*fd)?;
                    }
                    Ok(())
                });
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = net;
    command
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(output))
        // Signals for the terminal's foreground group (Ctrl+C in `-p`) are the agent's
        // to handle, not the supervisor's.
        .process_group(0);
    configure(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start a supervisor: {e}")))?;
    // The command holds the parent's copy of the output pipe until dropped.
    drop(command);
    #[cfg(target_os = "linux")]
    if let Some(channel) = &mut egress {
        channel.close_supervisor_end();
    }
    let (Some(control), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the supervisor has no pipes"));
    };
    #[allow(unused_mut)] // only Linux serves an egress proxy
    let mut running = started(Handle::Child(child), Box::new(control), Box::new(stdout)).await?;
    #[cfg(target_os = "linux")]
    if let (Some(channel), Some(policy)) = (egress.take(), sandbox) {
        // On failure, dropping `running` kills the command.
        running.egress = Some(channel.serve(&policy.allow_hosts).map_err(|e| {
            std::io::Error::other(format!(
                "the egress proxy for [sandbox] allow_hosts could not start: {e}"
            ))
        })?);
    }
    Ok(running)
}

/// A supervisor is running: its first report line says whether the command started.
async fn started(
    mut supervisor: Handle,
    control: Control,
    report: Box<dyn AsyncRead + Send + Unpin>,
) -> std::io::Result<Supervised> {
    let mut report = BufReader::new(report).lines();
    match read_line(&mut report).await {
        Some(Line::Started { pid }) => Ok(Supervised {
            supervisor,
            control: Some(control),
            report,
            pid,
            exit: None,
            egress: None,
        }),
        Some(Line::Failed { message }) => {
            supervisor.wait().await;
            Err(std::io::Error::other(message))
        }
        _ => {
            let status = supervisor.wait().await;
            Err(std::io::Error::other(format!(
                "the supervisor stopped before starting the command ({status})"
            )))
        }
    }
}

/// With `[sandbox] allow_hosts`: the socket pair over which the command's proxy listener
/// comes back (`crate::sandbox::egress`). Elsewhere than Linux commands keep no network.
#[cfg(target_os = "linux")]
fn egress_channel(
    sandbox: Option<&Policy>,
) -> std::io::Result<Option<crate::sandbox::egress::Channel>> {
    match sandbox {
        Some(policy) if policy.egress_bridge() => Ok(Some(crate::sandbox::egress::Channel::new()?)),
        _ => Ok(None),
    }
}

#[cfg(not(target_os = "linux"))]
fn egress_channel(_sandbox: Option<&Policy>) -> std::io::Result<Option<()>> {
    Ok(None)
}

async fn read_line(report: &mut Report) -> Option<Line> {
    loop {
        let line = report.next_line().await.ok()??;
        if let Ok(parsed) = serde_json::from_str(&line) {
            return Some(parsed);
        }
        tracing::warn!(%line, "unreadable supervisor report line");
    }
}

impl Supervised {
    /// With `[sandbox] allow_hosts`: the connections the proxy refused the command, also
    /// after it ended.
    pub fn egress_refusals(&self) -> Option<crate::sandbox::egress::Refusals> {
        self.egress.as_ref().map(|session| session.refusals())
    }

    /// Wait until the command's main process ends. Cancel-safe (for `select!`).
    pub async fn exited(&mut self) -> Option<Exit> {
        if let Some(exit) = self.exit {
            return Some(exit);
        }
        loop {
            match read_line(&mut self.report).await? {
                Line::Exited { code, signal } => {
                    let exit = match (code, signal) {
                        (Some(code), _) => Exit::Code(code),
                        (None, Some(signal)) => Exit::Signal(signal),
                        (None, None) => Exit::Signal(0),
                    };
                    self.exit = Some(exit);
                    return Some(exit);
                }
                Line::Done(_) => return None,
                _ => {}
            }
        }
    }

    /// Kill the command and everything it started; what became of them.
    pub async fn kill(mut self) -> Finished {
        self.say(supervisor::KILL).await;
        self.finish().await
    }

    /// After the command ended on its own (`exited` said so): leave what it left running,
    /// and say what that is.
    pub async fn wait(mut self) -> Finished {
        self.say(supervisor::LEAVE).await;
        self.finish().await
    }

    async fn say(&mut self, word: u8) {
        if let Some(mut control) = self.control.take() {
            // Should the write fail, the supervisor is gone or sees the pipe end: a kill.
            let _ = control.write_all(&[word]).await;
        }
    }

    async fn finish(mut self) -> Finished {
        let outcome = tokio::time::timeout(REPORT_WAIT, async {
            loop {
                match read_line(&mut self.report).await {
                    Some(Line::Exited { code, signal }) => {
                        self.exit = Some(match (code, signal) {
                            (Some(code), _) => Exit::Code(code),
                            (_, signal) => Exit::Signal(signal.unwrap_or(0)),
                        });
                    }
                    Some(Line::Done(outcome)) => return Some(outcome),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await
        .ok()
        .flatten();
        if outcome.is_none() {
            // The supervisor died or hangs: at least the command's own group goes.
            kill_group(self.pid);
            self.supervisor.start_kill();
        }
        self.supervisor.wait().await;
        Finished {
            exit: self.exit,
            outcome,
        }
    }
}

/// What became of a command and its processes.
#[derive(Debug)]
pub struct Finished {
    /// How its main process ended, if the supervisor said.
    pub exit: Option<Exit>,
    /// `None` when the supervisor gave no account (it died): only the command's process
    /// group could be killed then.
    pub outcome: Option<Outcome>,
}

/// SIGKILL a whole process group.
pub fn kill_group(group: i32) {
    // SAFETY: killpg has no memory-safety preconditions; a stale group id fails with ESRCH.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
}
