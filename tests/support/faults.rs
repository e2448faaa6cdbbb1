//! Real disk faults for a child process: a file-size limit (`RLIMIT_FSIZE`) makes every
//! write past it fail with `EFBIG` ("File too large") — and a write across it is cut short,
//! a torn line as a full disk leaves — in the files the process writes, and in no other
//! process's. Lifting the limit of the running process is the space coming back.

/// Limit the size of every file the child writes to `bytes` (writes past it fail with
/// `EFBIG`, "File too large"; a write across it is cut short), with `SIGXFSZ` ignored so
/// the limit is an error and not death. Both are inherited through `exec`.
pub fn limit_file_size(cmd: &mut tokio::process::Command, bytes: u64) {
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit, signal).
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                || libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The space comes back: lift the running child's file-size limit.
pub fn lift_file_size_limit(pid: u32) {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: plain syscall on our own child with a valid struct.
    let done = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &unlimited, std::ptr::null_mut()) };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

/// Every line of a JSON-lines file (a session, a checkpoint log), each of which must be
/// whole JSON: a torn line fails the test, naming it.
pub fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid line ({e}): {l}")))
        .collect()
}

/// Limit the size of every file the child writes to `bytes`, as a user's shell under
/// `ulimit -f` does: with `SIGXFSZ` at its default action (death, unless the process
/// catches it) whatever the test process inherited.
pub fn limit_file_size_as_a_shell_does(cmd: &mut tokio::process::Command, bytes: u64) {
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit, signal).
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                || libc::signal(libc::SIGXFSZ, libc::SIG_DFL) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
