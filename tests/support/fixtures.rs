//! Where the test programs are: small programs the tests start as child processes
//! (tests/fixtures), built as examples by `cargo test` beside the test binaries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The test program `name` (an `[[example]]` in Cargo.toml) of this build.
pub fn program(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/it-HASH → target/<profile>/examples/NAME
    let path = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` builds it, a run of one test target does not \
         (`cargo build --examples` builds it too)",
        path.display()
    );
    path
}
