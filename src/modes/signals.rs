//! SIGINT / SIGTERM for headless runs: the first one aborts the run (exit 130 / 143 once it
//! has ended); a second one exits at once.

use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Interrupts {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
}

impl Interrupts {
    pub fn new() -> Self {
        Interrupts {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Wait for the next SIGINT or SIGTERM; returns the exit code it stands for.
    pub async fn next(&mut self) -> u8 {
        let interrupt = async {
            match &mut self.interrupt {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let terminate = async {
            match &mut self.terminate {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interrupt => 130,
            _ = terminate => 143,
        }
    }
}
