//! Tests that cannot run here (no `node`, no corpus) say so where a person sees it: a
//! `SKIPPED: <test>: <why>` line written straight to the terminal (libtest captures only
//! `print!`/`eprint!` output, and only shows it when a test fails), and, once the run ends,
//! one line counting the skips — after libtest's own summary, which counts a skipped test as
//! passed. Never a silent pass.

use std::io::Write;
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

static SKIPPED: AtomicUsize = AtomicUsize::new(0);
static AT_EXIT: Once = Once::new();

/// Whether `program` is a file in one of `$PATH`'s directories: what a test that runs it
/// checks before it skips.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).exists()))
}

/// Say that the running test skips, and why. The caller returns right after.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test}: {why}");
    SKIPPED.fetch_add(1, Ordering::SeqCst);
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain `extern "C"` function with no arguments.
        unsafe {
            libc::atexit(report);
        }
    });
}

extern "C" fn report() {
    let n = SKIPPED.load(Ordering::SeqCst);
    let _ = writeln!(
        std::io::stderr().lock(),
        "{n} test{} SKIPPED (counted as passed above): see the SKIPPED lines for why",
        if n == 1 { "" } else { "s" }
    );
}
