//! The real binary doing a whole coding task with a scripted model: explore a repository
//! with grep/find (in one message, run together), run the failing tests with bash, read the
//! file, fix the bug with edit, and run the tests again — `-p --permission-mode auto`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::harness::transcript;
use support::process::{command, run};
use support::server::{FakeServer, Reply};

const BUGGY: &str = "#!/usr/bin/env bash\n# Arithmetic helpers.\n\nadd() {\n    echo $(( $1 - $2 ))\n}\n\nmul() {\n    echo $(( $1 * $2 ))\n}\n";

const TEST: &str = "#!/usr/bin/env bash\nsource \"$(dirname \"$0\")/../src/math.sh\"\nfail=0\n[ \"$(add 2 3)\" = 5 ] || { echo \"FAIL: add 2 3 = $(add 2 3)\"; fail=1; }\n[ \"$(mul 2 3)\" = 6 ] || { echo \"FAIL: mul 2 3\"; fail=1; }\n[ $fail = 0 ] && echo \"all tests passed\"\nexit $fail\n";

#[tokio::test]
async fn a_scripted_model_finds_and_fixes_a_bug_through_the_real_binary() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    for (path, body) in [
        ("src/math.sh", BUGGY),
        ("tests/test_math.sh", TEST),
        ("README.md", "Run tests with: bash tests/test_math.sh\n"),
        ("target/stale.sh", "add() { :; }\n"),
        (".gitignore", "target/\n"),
    ] {
        let full = repo.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, body).unwrap();
    }
    let run_tests = json!({"command": "bash tests/test_math.sh"});
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", "grep", json!({"pattern": "add\\(\\)", "glob": "*.sh"})),
            ("c2", "find", json!({"pattern": "*.sh"})),
        ])),
        Reply::sse(chat::tool_call("c3", "bash", run_tests.clone())),
        Reply::sse(chat::tool_call("c4", "read", json!({"path": "src/math.sh"}))),
        Reply::sse(chat::tool_call(
            "c5",
            "edit",
            json!({"path": "src/math.sh", "edits": [
                {"oldText": "add() {\n    echo $(( $1 - $2 ))", "newText": "add() {\n    echo $(( $1 + $2 ))"}
            ]}),
        )),
        Reply::sse(chat::tool_call("c6", "bash", run_tests)),
        Reply::sse(chat::text("Fixed `add` in src/math.sh; the tests pass.")),
    ])
    .await;
    let mut cmd = command(home.path(), repo.path());
    cmd.args([
        "--base-url",
        &server.v1(),
        "--model",
        "test-model",
        "-p",
        "--permission-mode",
        "auto",
        "The add test fails. Fix it.",
    ]);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Fixed `add` in src/math.sh; the tests pass.\n");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/math.sh")).unwrap(),
        BUGGY.replace("$1 - $2", "$1 + $2")
    );

    let bodies = server.bodies();
    assert_eq!(bodies.len(), 6);
    // grep and find answered in call order; .gitignore'd target/ is not searched.
    let explored = transcript(&bodies[1]);
    assert_eq!(explored[3], "tool:c1:src/math.sh:4: add() {\n");
    assert_eq!(explored[4], "tool:c2:src/math.sh\ntests/test_math.sh");
    let failing = transcript(&bodies[2]);
    assert_eq!(
        failing.last().unwrap(),
        "tool:c3:FAIL: add 2 3 = -1\n\n[exit code 1]"
    );
    let read = transcript(&bodies[3]);
    assert_eq!(read.last().unwrap(), &format!("tool:c4:{BUGGY}"));
    let edited = transcript(&bodies[4]);
    assert_eq!(
        edited.last().unwrap(),
        "tool:c5:Edited src/math.sh: 1 replacement, first change at line 4."
    );
    let passing = transcript(&bodies[5]);
    assert_eq!(
        passing.last().unwrap(),
        "tool:c6:all tests passed\n\n[exit code 0]"
    );
    // The model was offered every tool (`task` starts a sub-agent).
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "read",
            "write",
            "edit",
            "bash",
            "bash_output",
            "kill_shell",
            "grep",
            "find",
            "ls",
            "todo_write",
            "web_fetch",
            "task",
            "ask_user"
        ]
    );
}
