//! Living under a file-size limit (`ulimit -f`, `RLIMIT_FSIZE`). A write past the limit
//! raises SIGXFSZ, whose default action kills the process without a word; with the signal
//! caught, the write fails with `EFBIG` ("File too large") instead, and the agent's own
//! handling of a file that cannot be written applies (docs/sessions.md: the run stops,
//! nothing reported complete is lost, and it says why).
//!
//! Caught by a handler that does nothing, not ignored (`SIG_IGN`): an ignored signal stays
//! ignored across `exec`, so every command the agent runs would inherit it, while a handler
//! is reset to the default in a new program — commands see the limit as they would
//! anywhere else.

/// Catch SIGXFSZ for the rest of the process's life. Call once, early in `main`.
pub fn catch_sigxfsz() {
    extern "C" fn nothing(_signal: libc::c_int) {}
    // SAFETY: a zeroed `sigaction` is a valid empty one; the handler is an `extern "C"` fn
    // that does nothing (so it is async-signal-safe), and `sigaction` only reads the struct.
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut())
    };
    if installed != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "SIGXFSZ could not be caught: a file-size limit would end the agent"
        );
    }
}
