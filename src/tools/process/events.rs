//! What a supervisor waits for while its command runs: the agent's word on its stdin (`k`,
//! `l`, end of file) and the command's end. On Linux both are waited for in the
//! supervisor's one thread (`poll` of its stdin and of a pidfd of the command); elsewhere,
//! or where pidfds are missing, by two threads, one blocked on each. (Two threads per
//! command were a fifth of a supervisor's cost, their start and their stacks' teardown,
//! and every event crossed from one thread to another before it was acted on: issue 32.)

use super::supervisor::{KILL, LEAVE};
use std::io::Read;
use std::os::fd::AsFd;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

pub enum Event {
    /// The agent asked for the kill, or went away.
    Kill,
    /// The agent saw the command end on its own: what it left running stays.
    Leave,
    Exited(ExitStatus),
}

/// The agent's stdin as a file of its own: the descriptor itself, not the process's
/// buffered `Stdin` (a forked supervisor inherits whatever the agent's buffer held when
/// the fork server was forked).
fn stdin() -> std::io::Result<std::fs::File> {
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
}

/// What a byte from the agent means: `Some` ends the listening.
fn word(read: std::io::Result<usize>, byte: u8) -> Option<Event> {
    match read {
        Ok(1) if byte == LEAVE => Some(Event::Leave),
        // Any other byte but `k` is ignored.
        Ok(1) if byte != KILL => None,
        // `k`, end of file or an error kills.
        _ => Some(Event::Kill),
    }
}

/// The events of one command, in the order they come. Once the agent's word (`Leave` or
/// `Kill`) has come, the stdin is not listened to any more.
pub enum Events {
    #[cfg(target_os = "linux")]
    Polled(Polled),
    Threads(mpsc::Receiver<Event>),
}

impl Events {
    /// Start listening; `None` when the threads could not be started (then the agent's
    /// word or the command's end could go unseen).
    pub fn start(child: Child) -> Option<Events> {
        #[cfg(target_os = "linux")]
        let child = match Polled::new(child) {
            Ok(polled) => return Some(Events::Polled(polled)),
            Err(child) => child,
        };
        threads(child).map(Events::Threads)
    }

    /// The next event (blocking).
    pub fn next(&mut self) -> Event {
        match self {
            #[cfg(target_os = "linux")]
            Events::Polled(polled) => polled.next(),
            // Both threads gone: nothing more can be learnt, so kill.
            Events::Threads(received) => received.recv().unwrap_or(Event::Kill),
        }
    }

    /// The command's end if it comes within `patience` (after a kill).
    pub fn exited_within(&mut self, patience: Duration) -> Option<ExitStatus> {
        match self {
            #[cfg(target_os = "linux")]
            Events::Polled(polled) => polled.exited_within(patience),
            Events::Threads(received) => loop {
                match received.recv_timeout(patience) {
                    Ok(Event::Exited(status)) => break Some(status),
                    Ok(_) => {}
                    Err(_) => break None,
                }
            },
        }
    }
}

/// One thread reading the agent's word, one waiting for the command.
fn threads(mut child: Child) -> Option<mpsc::Receiver<Event>> {
    let (events, received) = mpsc::channel();
    let agent = events.clone();
    let listening = std::thread::Builder::new().spawn(move || {
        let mut byte = [0u8; 1];
        let mut stdin = stdin();
        let word = loop {
            let read = match &mut stdin {
                Ok(stdin) => stdin.read(&mut byte),
                Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            };
            if let Some(word) = word(read, byte[0]) {
                break word;
            }
        };
        let _ = agent.send(word);
    });
    let waiting = std::thread::Builder::new().spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = events.send(Event::Exited(status));
        }
    });
    (listening.is_ok() && waiting.is_ok()).then_some(received)
}

/// Both waited for by `poll` in the calling thread.
#[cfg(target_os = "linux")]
pub struct Polled {
    child: Child,
    pidfd: std::os::fd::OwnedFd,
    /// `None` once the agent's word came (or the stdin could not be had: then the first
    /// event is a kill, as in the threads' case).
    stdin: Option<std::io::Result<std::fs::File>>,
    exited: bool,
}

#[cfg(target_os = "linux")]
impl Polled {
    /// `Err(child)` back when there is no pidfd for it.
    fn new(child: Child) -> Result<Polled, Child> {
        let pidfd = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .and_then(|pid| {
                rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
            });
        match pidfd {
            Some(pidfd) => Ok(Polled {
                child,
                pidfd,
                stdin: Some(stdin()),
                exited: false,
            }),
            None => Err(child),
        }
    }

    fn next(&mut self) -> Event {
        use std::os::fd::AsRawFd;
        loop {
            let stdin_fd = match &self.stdin {
                Some(Ok(file)) => file.as_raw_fd(),
                Some(Err(_)) => {
                    self.stdin = None;
                    return Event::Kill;
                }
                None => -1,
            };
            let pidfd = if self.exited {
                -1
            } else {
                self.pidfd.as_raw_fd()
            };
            if stdin_fd < 0 && pidfd < 0 {
                // Nothing left to wait for (the caller has what it needs by then).
                return Event::Kill;
            }
            let mut fds = [
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stdin_fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: poll on an array of two pollfd structs owned here; a negative
            // descriptor is ignored by the kernel.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Event::Kill;
            }
            if fds[0].revents != 0 {
                // A pidfd reads as ready once its process has ended: this reaps it.
                self.exited = true;
                if let Ok(status) = self.child.wait() {
                    return Event::Exited(status);
                }
            }
            if fds[1].revents != 0
                && let Some(Ok(stdin)) = &mut self.stdin
            {
                let mut byte = [0u8; 1];
                let read = stdin.read(&mut byte);
                if let Some(word) = word(read, byte[0]) {
                    self.stdin = None;
                    return word;
                }
            }
        }
    }

    fn exited_within(&mut self, patience: Duration) -> Option<ExitStatus> {
        use std::os::fd::AsRawFd;
        if self.exited {
            return None;
        }
        let deadline = std::time::Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let mut fds = [libc::pollfd {
                fd: self.pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            let millis = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: poll on one pollfd struct owned here.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, millis) };
            if ready < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            if ready <= 0 {
                return None;
            }
            self.exited = true;
            return self.child.wait().ok();
        }
    }
}
