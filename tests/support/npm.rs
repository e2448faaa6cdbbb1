//! The npm packages some tests run (tests/npm: MCP servers; tests/lsp-npm: language
//! servers): installed on first use by the directory's install.sh (tests/npm-ci.sh, which
//! installs once even when two test runs in one checkout ask at the same time), or skipped
//! visibly when node or npm is missing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `tests/<dir>/node_modules` with each of `needed` (paths below it) there, installing the
/// packages first unless they are; `None`, after saying why the test skips, without node and
/// npm. A failed install fails the test.
pub fn installed(dir: &str, needed: &[&str], needs_them: &str) -> Option<PathBuf> {
    static CHECKED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let modules = root.join("node_modules");
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    let checked = checked.get_or_insert_with(HashSet::new);
    if !checked.contains(dir) {
        if !has("node") || !has("npm") {
            super::skip::skip(&format!(
                "node and npm are needed to run {needs_them} (tests/{dir}/install.sh)"
            ));
            return None;
        }
        // Always asked (once per process): under its lock the script finds an install done
        // for this package-lock.json with every needed file there and leaves it alone, or
        // installs — also when another test run is installing right now, or the lock changed.
        let status = std::process::Command::new("bash")
            .arg(root.join("install.sh"))
            .args(needed.iter().map(|path| format!("node_modules/{path}")))
            .status()
            .unwrap_or_else(|e| panic!("run tests/{dir}/install.sh: {e}"));
        assert!(status.success(), "tests/{dir}/install.sh failed");
        checked.insert(dir.to_string());
    }
    Some(modules)
}

fn has(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
