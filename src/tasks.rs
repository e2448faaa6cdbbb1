//! Starting tokio tasks and blocking jobs with their types erased. `tokio::spawn` and
//! `spawn_blocking` compile the whole task machinery (the task cell, its harness, its drop
//! and panic paths: about 1,800 lines of LLVM IR, twice over for `spawn` as either runtime
//! may run it) once per future or closure type. Boxed as a trait object first, every task
//! with the same output shares one copy: the cost is one allocation when the task starts
//! (beside the task cell tokio allocates anyway) and an indirect call per poll. Nothing
//! polled per streamed delta is started here. Imports nothing of ours.

use std::future::Future;
use std::pin::Pin;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// A future as every task started here holds it.
type Task<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A blocking job as every job started here holds it.
type Job<T> = Box<dyn FnOnce() -> T + Send + 'static>;

/// `tokio::spawn`, with one task type per output type.
#[track_caller]
pub fn spawn<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> JoinHandle<T> {
    let task: Task<T> = Box::pin(future);
    #[allow(clippy::disallowed_methods)] // the one place that may
    tokio::spawn(task)
}

/// `handle.spawn(future)`, with one task type per output type.
#[track_caller]
pub fn spawn_on<T: Send + 'static>(
    handle: &Handle,
    future: impl Future<Output = T> + Send + 'static,
) -> JoinHandle<T> {
    let task: Task<T> = Box::pin(future);
    #[allow(clippy::disallowed_methods)] // the one place that may
    handle.spawn(task)
}

/// `tokio::task::spawn_blocking`, with one job type per output type.
#[track_caller]
pub fn spawn_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let job: Job<T> = Box::new(work);
    #[allow(clippy::disallowed_methods)] // the one place that may
    tokio::task::spawn_blocking(job)
}
