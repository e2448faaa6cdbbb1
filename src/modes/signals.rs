//! SIGINT / SIGTERM / SIGHUP for headless runs: the first one aborts the run (exit 130 /
//! 143 / 129 once it has ended — its tools' processes killed and their results written);
//! a second one exits at once. SIGHUP is the terminal closing under a `-p` run.

use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Interrupts {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    hangup: Option<Signal>,
}

impl Interrupts {
    pub fn new() -> Self {
        Interrupts {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
            hangup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// Wait for the next SIGINT, SIGTERM or SIGHUP; returns the exit code it stands for.
    pub async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = recv(&mut self.interrupt) => 130,
            _ = recv(&mut self.terminate) => 143,
            _ = recv(&mut self.hangup) => 129,
        }
    }
}

async fn recv(signal: &mut Option<Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}
