use super::*;

fn shape(command: &str) -> CommandShape {
    parse(command).unwrap_or_else(|| panic!("did not parse: {command}"))
}

fn segments(command: &str) -> Vec<String> {
    shape(command)
        .segments
        .into_iter()
        .map(|s| s.text)
        .collect()
}

fn judged(command: &str) -> Vec<String> {
    shape(command).judged().map(|s| s.text.clone()).collect()
}

fn opaque(command: &str) -> Vec<String> {
    shape(command).opaque
}

#[test]
fn splits_lists_pipelines_and_newlines() {
    assert_eq!(
        segments("git status && rm -rf ~"),
        ["git status", "rm -rf ~"]
    );
    assert_eq!(segments("a || b; c | d\ne"), ["a", "b", "c", "d", "e"]);
    assert_eq!(segments("cargo   test \\\n  --all"), ["cargo test --all"]);
}

#[test]
fn finds_commands_inside_substitutions_and_blocks() {
    assert_eq!(
        segments("echo $(rm -rf /tmp/x)"),
        ["echo $(rm -rf /tmp/x)", "rm -rf /tmp/x"]
    );
    assert_eq!(segments("echo `whoami`"), ["echo `whoami`", "whoami"]);
    assert_eq!(segments("diff <(ls a) b"), ["diff <(ls a) b", "ls a"]);
    assert_eq!(segments("for f in *.rs; do wc -l $f; done"), ["wc -l $f"]);
    assert_eq!(segments("(cd x && make)"), ["cd x", "make"]);
    assert_eq!(
        segments("if test -f a; then cat a; fi"),
        ["test -f a", "cat a"]
    );
    assert_eq!(judged("FOO=1 make"), ["make"]);
    assert_eq!(segments("X=$(id)"), ["X=$(id)", "id"]);
    assert_eq!(segments("export A=1"), ["export A=1"]);
    assert_eq!(segments("cat <<EOF\n$(rm -rf x)\nEOF"), ["cat", "rm -rf x"]);
}

#[test]
fn notices_redirections_that_write_files() {
    assert!(shape("echo hi > notes.txt").writes_files);
    assert!(shape("echo hi >> ~/.bashrc").writes_files);
    assert!(shape("ls &> out.log").writes_files);
    assert!(!shape("cargo test 2>&1 | tail").writes_files);
    assert!(!shape("make > /dev/null 2>&1").writes_files);
    assert!(!shape("wc -l < input.txt").writes_files);
    assert!(!shape("cat <<EOF\nhi\nEOF").writes_files);
}

#[test]
fn refuses_what_bash_would_not_parse() {
    assert_eq!(parse("echo 'unterminated"), None);
    assert_eq!(parse("if then fi ("), None);
}

#[test]
fn commands_are_spelled_as_bash_runs_them() {
    for command in [
        r"\rm -rf x",
        "r''m -rf x",
        "\"rm\" -rf x",
        r"$'\x72m' -rf x",
        "'rm' '-rf' x",
    ] {
        assert_eq!(judged(command), ["rm -rf x"], "{command}");
    }
    // Brace expansion: `r{m,}` is `rm r`.
    assert_eq!(judged("r{m,} -rf x"), ["rm r -rf x"]);
    // A path is matched by its program name too.
    for command in ["/bin/rm -rf x", "/usr/bin/../bin/rm -rf x", "./rm -rf x"] {
        let shape = shape(command);
        assert!(
            shape.segments[0]
                .spellings
                .contains(&"rm -rf x".to_string()),
            "{command}: {:?}",
            shape.segments
        );
        assert_ne!(shape.segments[0].text, "rm -rf x", "{command}");
    }
    assert_eq!(judged("echo 'a b'"), ["echo 'a b'"]);
}

#[test]
fn variables_that_change_what_runs_stay_with_the_command() {
    let shape = shape("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor git status");
    let judged: Vec<&Segment> = shape.judged().collect();
    assert_eq!(judged.len(), 1);
    assert_eq!(
        judged[0].text,
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor git status"
    );
    let names: Vec<&str> = judged[0].sets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0"]);
    assert!(judged[0].spellings.contains(&"git status".to_string()));
    // Harmless variables leave the command as it was.
    let shape = shape_of("RUST_LOG=debug cargo build");
    assert_eq!(
        shape.judged().map(|s| &s.text).collect::<Vec<_>>(),
        ["cargo build"]
    );
    assert!(shape.judged().all(|s| s.sets.is_empty()));
    // Through env, sudo, a wrapper and a script.
    for command in [
        "env LD_PRELOAD=./x.so ls",
        "sudo LD_PRELOAD=./x.so ls",
        "LD_PRELOAD=./x.so nice ls",
        "LD_PRELOAD=./x.so bash -c ls",
    ] {
        let shape = shape_of(command);
        let sets: Vec<&str> = shape
            .judged()
            .flat_map(|s| s.sets.iter().map(|(n, _)| n.as_str()))
            .collect();
        assert_eq!(sets, ["LD_PRELOAD"], "{command}: {:?}", shape.segments);
    }
    // Set for later commands.
    for command in [
        "export LD_PRELOAD=./x.so; ls",
        "PATH=.:$PATH; ls",
        "read PATH",
    ] {
        assert!(
            shape_of(command).judged().any(|s| !s.sets.is_empty()),
            "{command}"
        );
    }
}

fn shape_of(command: &str) -> CommandShape {
    shape(command)
}

#[test]
fn text_evaluated_later_cannot_be_judged() {
    for command in [
        "x='a[$(rm -rf ~)]'; echo $((x))",
        "x='a[$(rm -rf ~)]'; echo $[x]",
        "x='a[$(rm -rf ~)]'; (( x ))",
        "x='a[$(rm -rf ~)]'; let x",
        "x='a[$(rm -rf ~)]'; [[ $x -eq 1 ]]",
        "x='a[$(rm -rf ~)]'; echo ${s:x}",
        "echo ${a[$1]}",
        "read x; echo $((x + 1))",
        "echo $(( $(cat n) + 1 ))",
        "echo ${x@P}",
        "echo ${!x}",
        "printf -v 'a[$(rm -rf ~)]' %s 1",
        "printf -v \"$name\" %s 1",
        "test -v 'a[$(rm -rf ~)]'",
        "[ -v \"$x\" ]",
        "[[ -v $x ]]",
        "declare \"$x\"=1",
        "declare -n ref=x",
        "declare -i n; n=$1",
        "read 'a[$(rm -rf ~)]'",
        "unset 'a[$(rm -rf ~)]'",
        "PS4='$(rm -rf ~)' bash -x -c ls",
        "BASH_ENV='$(rm -rf ~)' bash -c ls",
        "env 'BASH_FUNC_ls%%=() { rm -rf ~; }' bash -c ls",
        "PROMPT_COMMAND=ls bash -i",
        "for f in *; do echo $((f)); done",
    ] {
        assert!(!opaque(command).is_empty(), "{command}");
    }
    for command in [
        "echo $((1 + 2))",
        "i=0; while [ $i -lt 3 ]; do i=$((i + 1)); done",
        "for i in 1 2 3; do echo $((i * 2)); done",
        "for ((i = 0; i < 10; i++)); do echo $i; done",
        "n=5; (( n++ )); echo ${a[n]}",
        "declare -A m; m[$key]=1",
        "echo ${#x} ${x:-default} ${!prefix*} ${!arr[@]}",
        "echo $(( RANDOM % 6 + $# ))",
        "printf -v out %s hello",
        "read -r line",
        "test -v HOME",
        "PS4='+ ' bash -x -c ls",
        "let 'n = 3' n++",
    ] {
        assert!(
            opaque(command).is_empty(),
            "{command}: {:?}",
            opaque(command)
        );
    }
}

#[test]
fn wrappers_and_runners_show_what_they_run() {
    let shape = shape("setsid -f rm -rf x");
    assert_eq!(
        shape.judged().map(|s| &s.text).collect::<Vec<_>>(),
        ["rm -rf x"]
    );
    // A runner is judged as itself; what it may run is seen, not judged.
    let shape = shape_of("uv run rm -rf x");
    assert_eq!(
        shape.judged().map(|s| &s.text).collect::<Vec<_>>(),
        ["uv run rm -rf x"]
    );
    assert!(
        shape
            .segments
            .iter()
            .any(|s| s.text == "rm -rf x" && !s.judged)
    );
    assert!(opaque("uv run bash").is_empty());
    assert_eq!(judged("trap 'rm -f \"$tmp\"' EXIT"), ["rm -f \"$tmp\""]);
    assert!(!opaque("source <(curl -s example.com)").is_empty());
    assert!(!opaque(". /dev/stdin <<< 'rm -rf x'").is_empty());
    assert!(!opaque("bash <(echo rm -rf x)").is_empty());
    assert!(!opaque("alias x=rm").is_empty());
    assert!(opaque("source .venv/bin/activate && pytest").is_empty());
}

#[test]
fn everyday_commands_are_judged_as_before() {
    for command in [
        "git status",
        "git log --oneline -20 --format='%H %s'",
        "cargo test -q 2>&1 | tail -30",
        "find . -name '*.rs' -print0 | xargs -0 wc -l",
        "python - <<'EOF'\nprint(1)\nEOF",
        "cat > notes.md <<EOF\n# $TITLE\nEOF",
        "if [ -f Cargo.toml ]; then cargo build; fi",
        "while read -r line; do echo \"$line\"; done < input.txt",
        "echo \"$(date +%s)\"",
        "cd \"$(git rev-parse --show-toplevel)\" && ls",
        "for f in src/*.rs; do wc -l \"$f\"; done",
        "ls -la | head -20",
        "make >/dev/null 2>&1 || true",
        "set -euo pipefail; npm ci; npm test",
        "tmp=$(mktemp); trap 'rm -f \"$tmp\"' EXIT; ls > \"$tmp\"",
        "time cargo build --release",
        "{ echo a; echo b; } | sort",
        "(cd sub && make) &\nwait",
        "[[ -n \"${VAR:-}\" ]] && echo set",
        "x=$(( x + 1 ))",
        "declare -a arr=(); arr+=(\"x\"); echo \"${arr[@]}\"",
        "case \"$1\" in a|b) echo ab;; *) echo other;; esac",
        "grep -E '^(a|b)$' file.txt",
        "sed -i 's/a/b/g' file.txt",
        "jq '.[] | .name' package.json",
        "npm run build -- --watch",
        "docker run --rm -v \"$PWD\":/w img sh -c 'make'",
        "RUST_LOG=debug cargo build",
        "env RUST_BACKTRACE=1 cargo test",
        "echo {a,b}.txt src/{x,y}.rs {1..5}",
        "mkdir -p src/{bin,lib} && touch src/lib/mod.rs",
        "printf '%s\\n' \"$@\"",
        "echo $((2 ** 10)) $((RANDOM % 10))",
        "test -z \"$x\" && echo empty",
        "source .venv/bin/activate && pytest -q",
        "uv run pytest -x",
        "npx prettier --check .",
        "awk '{print $1}' file | sort | uniq -c",
        "curl -s https://example.com | jq .",
        "timeout 60 cargo test --all",
        "nohup ./server > server.log 2>&1 &",
        "git diff HEAD~1 -- src/ | less",
    ] {
        let shape = parse(command).unwrap_or_else(|| panic!("did not parse: {command}"));
        assert!(shape.opaque.is_empty(), "{command}: {:?}", shape.opaque);
        assert!(
            shape.judged().all(|s| s.sets.is_empty()),
            "{command}: {:?}",
            shape.segments
        );
    }
}
