//! The `agent` binary. Everything it does is in the library's `entry` module: compiled once
//! there, the binary crate holds no code of its own (as its own crate it re-instantiated the
//! front ends' generic code: 82 s of CPU in a release build, 0.5 s now).

fn main() -> std::process::ExitCode {
    agent::entry::main()
}
