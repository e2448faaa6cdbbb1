//! The lines that close a command's result: how it ended, and the truth about the
//! processes it started — which were killed (and which of those had left its process
//! group, where killing the group alone would have missed them), which could not be
//! killed, and which it left running in the background.

use crate::tools::process::report::{Outcome, Proc};
use crate::tools::process::{Exit, Finished};
use serde_json::{Value, json};
use std::time::Duration;

/// Why the tool stopped waiting for the command.
#[derive(Clone, Copy, Debug)]
pub enum Ending {
    Exited,
    TimedOut(Duration),
    Aborted,
}

/// What closes the result: notes and the status line (the last line), whether the call
/// failed, and the details about processes.
pub struct Status {
    pub lines: Vec<String>,
    pub is_error: bool,
    pub exit_code: Option<i32>,
    pub details: Value,
}

pub fn status(ending: Ending, finished: &Finished, command_pid: i32) -> Status {
    let outcome = finished.outcome.as_ref();
    let mut lines = Vec::new();
    let (is_error, exit_code) = match ending {
        Ending::Exited => {
            if let Some(left) = outcome.map(|o| &o.left_running).filter(|l| !l.is_empty()) {
                lines.push(format!(
                    "[left running in the background: {}]",
                    list(left, usize::MAX)
                ));
            }
            match finished.exit {
                Some(Exit::Code(code)) => {
                    lines.push(format!("[exit code {code}]"));
                    (code != 0, Some(code))
                }
                Some(Exit::Signal(signal)) => {
                    lines.push(format!("[killed by signal {signal}]"));
                    (true, None)
                }
                None => {
                    lines.push("[the command ended; its exit status is unknown]".to_string());
                    (true, None)
                }
            }
        }
        Ending::TimedOut(after) => {
            let why = format!("timed out after {} s", after.as_secs_f64());
            lines.extend(kill_lines(&why, outcome, command_pid));
            (true, None)
        }
        Ending::Aborted => {
            lines.extend(kill_lines("aborted by the user", outcome, command_pid));
            (true, None)
        }
    };
    let details = json!({
        "killed": outcome.map(|o| o.killed.iter().map(|p| p.pid).collect::<Vec<_>>()),
        "survivors": outcome.map(|o| o.survivors.iter().map(|s| json!({
            "pid": s.process.pid,
            "name": s.process.name,
            "reason": s.reason,
        })).collect::<Vec<_>>()),
        "leftRunning": outcome.map(|o| o.left_running.iter().map(|p| json!({
            "pid": p.pid,
            "name": p.name,
        })).collect::<Vec<_>>()),
    });
    Status {
        lines,
        is_error,
        exit_code,
        details,
    }
}

/// What a kill did, first line saying why it happened.
fn kill_lines(why: &str, outcome: Option<&Outcome>, command_pid: i32) -> Vec<String> {
    let Some(outcome) = outcome else {
        return vec![format!(
            "[{why}; the command's process group was killed, but whether it started other \
             processes could not be checked]"
        )];
    };
    let others: Vec<&Proc> = outcome
        .killed
        .iter()
        .filter(|p| p.pid != command_pid)
        .collect();
    let command_killed = others.len() < outcome.killed.len();
    let mut first = format!("[{why}; ");
    match (command_killed, others.len()) {
        (true, 0) => first.push_str("the command was killed"),
        (false, 0) => first.push_str("nothing was left to kill"),
        (true, n) => first.push_str(&format!(
            "killed the command and {} it started",
            processes(n)
        )),
        (false, n) => first.push_str(&format!("killed {} it started", processes(n))),
    }
    let escaped = others.iter().filter(|p| p.left_group).count();
    if escaped > 0 {
        first.push_str(&format!(", {escaped} of which had left its process group"));
    }
    first.push(']');
    let mut lines = vec![first];
    if !outcome.survivors.is_empty() {
        let shown: Vec<String> = outcome
            .survivors
            .iter()
            .take(10)
            .map(|s| format!("pid {} ({}): {}", s.process.pid, s.process.name, s.reason))
            .collect();
        lines.push(format!(
            "[{} could not be killed and may still be running: {}]",
            processes(outcome.survivors.len()),
            shown.join("; ")
        ));
    }
    lines
}

fn processes(count: usize) -> String {
    if count == 1 {
        "1 process".to_string()
    } else {
        format!("{count} processes")
    }
}

/// `pid 12 (sleep), pid 13 (python3)`, at most `max` of them.
fn list(processes: &[Proc], max: usize) -> String {
    let mut shown: Vec<String> = processes
        .iter()
        .take(max.min(10))
        .map(|p| format!("pid {} ({})", p.pid, p.name))
        .collect();
    if processes.len() > shown.len() {
        shown.push(format!("and {} more", processes.len() - shown.len()));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::process::report::Survivor;

    fn proc(pid: i32, name: &str, left_group: bool) -> Proc {
        Proc {
            pid,
            name: name.to_string(),
            left_group,
        }
    }

    fn finished(exit: Option<Exit>, outcome: Option<Outcome>) -> Finished {
        Finished { exit, outcome }
    }

    #[test]
    fn kills_are_described_as_they_happened() {
        let outcome = Outcome {
            killed: vec![
                proc(10, "bash", false),
                proc(11, "sleep", false),
                proc(12, "daemon", true),
            ],
            survivors: vec![Survivor {
                process: proc(13, "stuck", true),
                reason: "it did not die".to_string(),
            }],
            left_running: vec![],
        };
        let s = status(
            Ending::TimedOut(Duration::from_secs(2)),
            &finished(Some(Exit::Signal(9)), Some(outcome)),
            10,
        );
        assert_eq!(
            s.lines,
            [
                "[timed out after 2 s; killed the command and 2 processes it started, 1 of which had left its process group]",
                "[1 process could not be killed and may still be running: pid 13 (stuck): it did not die]"
            ]
        );
        assert!(s.is_error);
        let s = status(
            Ending::Aborted,
            &finished(
                None,
                Some(Outcome {
                    killed: vec![proc(10, "bash", false)],
                    ..Outcome::default()
                }),
            ),
            10,
        );
        assert_eq!(s.lines, ["[aborted by the user; the command was killed]"]);
        let s = status(Ending::Aborted, &finished(None, None), 10);
        assert!(s.lines[0].contains("could not be checked"), "{:?}", s.lines);
    }

    #[test]
    fn background_processes_are_named() {
        let outcome = Outcome {
            left_running: vec![proc(20, "server", false)],
            ..Outcome::default()
        };
        let s = status(
            Ending::Exited,
            &finished(Some(Exit::Code(0)), Some(outcome)),
            10,
        );
        assert_eq!(
            s.lines,
            [
                "[left running in the background: pid 20 (server)]",
                "[exit code 0]"
            ]
        );
        assert!(!s.is_error);
        assert_eq!(s.exit_code, Some(0));
    }
}
