//! How a server subcommand (`agent proxy`, `agent serve`) runs: on a small multi-threaded
//! runtime of its own until its future ends (after SIGINT or SIGTERM), with the exit code
//! and the one line a user sees when it cannot start or stops on an error.

use std::future::Future;

/// Run `serve` to its end: 0 when it ends well, 1 (after `agent NAME: why` on stderr) when
/// the runtime cannot start or the server fails.
pub fn run_to_end<F>(name: &str, serve: F) -> u8
where
    F: Future<Output = Result<(), String>>,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agent {name}: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let served = runtime.block_on(serve);
    runtime.shutdown_background();
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agent {name}: {e}");
            1
        }
    }
}
