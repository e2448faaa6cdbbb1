//! What a supervisor tells the agent, one JSON line at a time on its stdout: the command
//! started (its pid) or could not; the command's main process ended (how); and, last, what
//! became of everything it started.

use serde::{Deserialize, Serialize};

/// One line of a supervisor's report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Line {
    /// The command runs, as this process (the leader of its own process group).
    Started { pid: i32 },
    /// The command could not be started.
    Failed { message: String },
    /// The command's main process ended: its exit code, or the signal that ended it.
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// The last line.
    Done(Outcome),
}

/// What became of the processes the command started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Killed on request (or because the agent went away).
    pub killed: Vec<Proc>,
    /// Still alive after the kill, and why.
    pub survivors: Vec<Survivor>,
    /// Left running when the command ended on its own (background processes).
    pub left_running: Vec<Proc>,
}

/// A process, as the model is told about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proc {
    pub pid: i32,
    pub name: String,
    /// It had left the command's process group (`setsid`, `setpgid`), so killing the
    /// group alone would have missed it.
    pub left_group: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Survivor {
    #[serde(flatten)]
    pub process: Proc,
    pub reason: String,
}
