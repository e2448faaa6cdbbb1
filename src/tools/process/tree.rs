//! The processes below a supervisor, read from `/proc` (the kernel here has no
//! `/proc/PID/task/TID/children`, and no crate reads one field of `/proc/PID/stat` more
//! simply than the few lines below): who is whose parent, which are still alive, and
//! stopping and killing a whole subtree so that nothing in it can fork its way out.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// One process, as `/proc/PID/stat` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub parent: i32,
    pub group: i32,
    /// The command name (at most 15 bytes, as the kernel keeps it).
    pub name: String,
    /// `Z` (zombie) or `X` (dead) once it has exited.
    pub state: char,
}

impl Process {
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

/// Parse `/proc/PID/stat`: `pid (name) state ppid pgrp ...`; the name may hold spaces and
/// parentheses, so it ends at the last `)`.
pub fn parse_stat(text: &str) -> Option<Process> {
    let (head, rest) = text.rsplit_once(')')?;
    let (pid, name) = head.split_once(" (")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some(Process {
        pid: pid.trim().parse().ok()?,
        parent,
        group,
        name: name.to_string(),
        state,
    })
}

/// Every process the system shows now.
pub fn all_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_stat(&text))
        .collect()
}

/// The processes below `root` (not `root` itself), parents before their children.
pub fn descendants(root: i32) -> Vec<Process> {
    let processes = all_processes();
    let mut children: HashMap<i32, Vec<&Process>> = HashMap::new();
    for process in &processes {
        children.entry(process.parent).or_default().push(process);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(pid) = queue.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if seen.insert(child.pid) {
                found.push((*child).clone());
                queue.push(child.pid);
            }
        }
    }
    found
}

/// Whether this process has any child, living or not yet reaped. A process with none has
/// no living descendant either: a process whose parent dies is adopted by the nearest
/// living subreaper above it (a supervisor is one), so every living process below this
/// one is a child of it or below a child of it.
pub fn has_children() -> bool {
    // SAFETY: an all-zero siginfo is valid; waitid with WNOWAIT only looks (reaps nothing).
    let result = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    !(result < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// A process that would not die, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Survivor {
    pub process: Process,
    pub reason: String,
}

/// What killing a subtree did.
#[derive(Debug, Default)]
pub struct Sweep {
    pub killed: Vec<Process>,
    pub survivors: Vec<Survivor>,
}

fn send(pid: i32, signal: i32) -> Result<(), std::io::Error> {
    // SAFETY: kill has no memory-safety preconditions. Every pid sent to was just read as
    // a descendant of this process; one below it cannot be reused before its parent reaps
    // it, and the direct children are only reaped by this process.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Kill every process below `root`: first stop them all (again and again until no new
/// one appears, so none can fork while the rest die), then kill them, then kill whatever
/// is still alive (orphans that came up to `root`, a subreaper) until nothing below `root`
/// lives or `patience` has passed; what lives then is a survivor.
pub fn kill_subtree(root: i32, patience: Duration) -> Sweep {
    let mut sweep = Sweep::default();
    let mut stopped: HashMap<i32, Process> = HashMap::new();
    // Freeze.
    loop {
        let fresh: Vec<Process> = descendants(root)
            .into_iter()
            .filter(|p| p.is_alive() && !stopped.contains_key(&p.pid))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for process in fresh {
            let _ = send(process.pid, libc::SIGSTOP);
            stopped.insert(process.pid, process);
        }
    }
    // Kill.
    let mut failed: HashMap<i32, String> = HashMap::new();
    let deadline = Instant::now() + patience;
    loop {
        let alive: Vec<Process> = descendants(root)
            .into_iter()
            .filter(Process::is_alive)
            .collect();
        if alive.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            sweep.survivors = alive
                .into_iter()
                .map(|process| Survivor {
                    reason: failed
                        .get(&process.pid)
                        .cloned()
                        .unwrap_or_else(|| "it did not die".to_string()),
                    process,
                })
                .collect();
            break;
        }
        for process in alive {
            match send(process.pid, libc::SIGKILL) {
                Ok(()) => {
                    failed.remove(&process.pid);
                    stopped.entry(process.pid).or_insert(process);
                }
                Err(e) => {
                    failed.insert(process.pid, e.to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let surviving: HashSet<i32> = sweep.survivors.iter().map(|s| s.process.pid).collect();
    let mut killed: Vec<Process> = stopped
        .into_values()
        .filter(|p| !surviving.contains(&p.pid))
        .collect();
    killed.sort_by_key(|p| p.pid);
    sweep.killed = killed;
    sweep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stat_lines_with_odd_names() {
        let process =
            parse_stat("4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0").unwrap();
        assert_eq!(
            process,
            Process {
                pid: 4242,
                parent: 1,
                group: 4242,
                name: "we (ird) name".to_string(),
                state: 'S',
            }
        );
        assert!(parse_stat("garbage").is_none());
        let me = std::process::id() as i32;
        assert!(all_processes().iter().any(|p| p.pid == me));
    }
}
