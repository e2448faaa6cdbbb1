//! Measuring a child process: wall time, CPU time (user + system) and peak RSS, either at
//! exit (`wait4`'s resource usage) or while it runs (`/proc`). CPU measured at exit is that
//! of the agent and of every process it started that has ended (its commands, their
//! supervisors, its fork server): the runner is their subreaper.
//!
//! A process's peak RSS survives `exec` and starts at its parent's size when it was
//! spawned, so a child of this (large) harness would report the harness's memory. Runs are
//! therefore measured by a small runner — this binary started again with `__measure` —
//! whose own size is far below the agent's.

use anyhow::{Context, bail};
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
    pub peak_rss_kb: u64,
}

/// Run `command` to completion and measure it (through the runner, see above).
pub fn run(command: Command) -> anyhow::Result<Sample> {
    let result = tempfile::NamedTempFile::new().context("creating the result file")?;
    let status = runner_for(&command, &result)?
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running the measuring runner")?;
    if !status.success() {
        bail!("the measured command {:?} failed", command.get_program());
    }
    read_result(result.path())
}

/// A command started through the runner with its stdin and stdout piped to the harness (the
/// runner hands them to the command), for scenarios that talk to it; `finish` measures it
/// once it has exited.
pub struct Piped {
    pub runner: std::process::Child,
    result: tempfile::NamedTempFile,
}

pub fn spawn_piped(command: &Command) -> anyhow::Result<Piped> {
    let result = tempfile::NamedTempFile::new().context("creating the result file")?;
    let mut runner = runner_for(command, &result)?;
    let runner = runner
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the measuring runner")?;
    Ok(Piped { runner, result })
}

impl Piped {
    /// Wait for the command to exit (close its stdin first if it reads it) and measure it.
    pub fn finish(mut self) -> anyhow::Result<Sample> {
        let status = self.runner.wait().context("waiting for the runner")?;
        if !status.success() {
            bail!("the measured command failed");
        }
        read_result(self.result.path())
    }
}

fn runner_for(command: &Command, result: &tempfile::NamedTempFile) -> anyhow::Result<Command> {
    let mut runner = Command::new(std::env::current_exe().context("finding the harness")?);
    runner
        .arg("__measure")
        .arg(result.path())
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => runner.env(name, value),
            None => runner.env_remove(name),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        runner.current_dir(dir);
    }
    Ok(runner)
}

fn read_result(path: &std::path::Path) -> anyhow::Result<Sample> {
    let text = std::fs::read_to_string(path).context("reading the runner's result")?;
    let numbers: Vec<u64> = text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [wall, cpu, peak_rss_kb] = numbers[..] else {
        bail!("the runner wrote {text:?}, not three numbers");
    };
    Ok(Sample {
        wall: Duration::from_nanos(wall),
        cpu: Duration::from_nanos(cpu),
        peak_rss_kb,
    })
}

/// The runner: `__measure RESULT_FILE PROGRAM ARGS...` runs the program and writes
/// "wall_ns cpu_ns peak_rss_kb" to the result file.
pub fn runner_main(args: &[String]) -> anyhow::Result<()> {
    let [result, program, rest @ ..] = args else {
        bail!("usage: __measure RESULT_FILE PROGRAM [ARGS...]");
    };
    let mut command = Command::new(program);
    command.args(rest);
    let sample = spawn_and_wait(command)?;
    std::fs::write(
        result,
        format!(
            "{} {} {}",
            sample.wall.as_nanos(),
            sample.cpu.as_nanos(),
            sample.peak_rss_kb
        ),
    )
    .context("writing the result")
}

fn spawn_and_wait(mut command: Command) -> anyhow::Result<Sample> {
    // Processes the agent starts that outlive it (its fork server, which ends with it)
    // come up to the runner, which reaps them below: their CPU time counts too.
    // SAFETY: prctl has no memory-safety preconditions.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let started = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("starting {:?}", command.get_program()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wait_error = (waited != pid).then(std::io::Error::last_os_error);
    let wall = started.elapsed();
    // The child was reaped by wait4 (or wait4 failed): dropping it would do nothing more.
    std::mem::forget(child);
    if let Some(error) = wait_error {
        bail!("wait4 failed: {error}");
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        bail!("{:?} failed: wait status {status}", command.get_program());
    }
    // Reap what came up to the runner (for at most two seconds: a daemon a command left
    // running is not waited for).
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: waitpid on the runner's own children.
        let reaped = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if reaped < 0 || Instant::now() >= deadline {
            break;
        }
        if reaped == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // Every process reaped so far: the agent, what it reaped (its commands' supervisors)
    // and what the runner reaped.
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut all: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut all) };
    Ok(Sample {
        wall,
        cpu: timeval(all.ru_utime) + timeval(all.ru_stime),
        peak_rss_kb: usage.ru_maxrss as u64,
    })
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// CPU time used so far by a running process.
pub fn cpu_of(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 (1-based); `rest` starts at field 3.
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// Peak resident set size so far (VmHWM), in KB.
pub fn peak_rss_of(pid: u32) -> u64 {
    status_field(pid, "VmHWM:")
}

pub fn rss_of(pid: u32) -> u64 {
    status_field(pid, "VmRSS:")
}

fn status_field(pid: u32, name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Context switches of every thread of a process: how often it woke up.
pub fn wakeups_of(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches:")
                        || l.starts_with("nonvoluntary_ctxt_switches:")
                })
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// The median of each measure over several samples.
pub fn median(samples: &[Sample]) -> Sample {
    fn mid<T: Ord + Copy + Default>(mut values: Vec<T>) -> T {
        values.sort_unstable();
        values.get(values.len() / 2).copied().unwrap_or_default()
    }
    Sample {
        wall: mid(samples.iter().map(|s| s.wall).collect()),
        cpu: mid(samples.iter().map(|s| s.cpu).collect()),
        peak_rss_kb: mid(samples.iter().map(|s| s.peak_rss_kb).collect()),
    }
}

pub fn median_duration(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}
