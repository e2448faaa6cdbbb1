#!/bin/sh
# Adds to a start-up list (start-up.keys' format) the functions sandboxed headless runs with
# tool rounds fault in, which callgrind cannot show: valgrind does not know Landlock's system
# calls, so under it the sandbox is unavailable and its code never runs.
#
#   link/page-fault-keys.sh KEYS BENCH [PROFILE]     (make-start-up-keys.sh runs it)
#
# KEYS is the list to extend (in place); BENCH the benchmark harness, whose loopback server
# (`scenarios serve tools`) answers. The program is this checkout's build in PROFILE
# (`release` unless named; `dist` names its whole-program build, whose functions after
# inlining are not the release build's), linked again with the list as it grows:
# `cargo rustc --profile PROFILE --bin agent -- -C save-temps --print link-args` gives the
# link command and keeps the objects it names (for `dist` that compiles the whole program
# once more: a minute and a half here with its dependencies built, ten minutes without).
#
# perf records the page faults of the agent and of the processes it forks (the fork server,
# the supervisors: the same program), with the faulting address of each (`-e page-faults
# -d`). A fault at the instruction's own address (or the next page, for an instruction that
# straddles two) is code being read in; its function, when not listed yet, is added. A fault
# maps the 64 kB window around it (the kernel's fault-around), hiding the other functions in
# that window, so the program is linked again with the longer list and run again, until a
# round finds nothing new (at most 15 rounds). Each round runs `-p` with and without a
# session and `--mode json`, the sandbox on, and `--version`.
#
# PAGE_FAULT_KEYS_PROGRAM, when set, names where to copy the program linked with the final
# list: what a build with that list gives, without the build, except that it keeps its
# symbol table (`strip` it to compare with a `dist` build).
#
# Written by hand: what is asked (which functions this program's sandboxed path runs, as
# link-order keys) is particular to this build; perf and the linker are the tools.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 KEYS BENCH [PROFILE]" >&2; exit 2; }
profile=${3:-release}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/keys-common.sh"
keys=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bench=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")

# cargo takes a relative CARGO_TARGET_DIR from where it is run: from here, as cargo runs in
# the checkout below.
case ${CARGO_TARGET_DIR:-/} in
/*) ;;
*) export CARGO_TARGET_DIR="$(pwd)/$CARGO_TARGET_DIR" ;;
esac
# Exit 3: perf is not here, or cannot record page faults (make-start-up-keys.sh then goes on
# without this pass).
command -v perf >/dev/null 2>&1 || { echo "perf is needed: not found" >&2; exit 3; }
for tool in cargo nm awk; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed: not found"
done
[ -x "$bench" ] || fail "no benchmark harness at $bench"

work=$(mktemp -d)
server=
kept=
cleanup() {
    if [ -n "$server" ]; then kill -INT "$server" 2>/dev/null || true; fi
    # What -C save-temps kept next to the program: listed right after cargo ran.
    if [ -n "$kept" ] && [ -r "$work/kept" ]; then
        while read -r name; do rm -rf "${kept:?}/$name"; done <"$work/kept"
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
case $work in
*[[:space:]]*) fail "the temporary directory $work has a space in its path: set TMPDIR" ;;
esac
mkdir -p "$work/home" "$work/cwd" "$work/deps"

# `record NAME COMMAND…`: COMMAND's page faults (with their addresses) in NAME.data, run in a
# home and directory of its own; its standard error in NAME.err. `--no-buildid-cache`: perf
# would otherwise copy the 40 MB program into ~/.debug each round.
record() {
    record_name=$1
    shift
    (cd "$work/cwd" && in_home "$work/home" perf record --quiet --no-buildid-cache \
        -e page-faults -c 1 -d -o "$work/$record_name.data" -- "$@" \
        >/dev/null 2>"$work/$record_name.err")
}

if ! record probe true; then
    echo "perf cannot record page faults here:" >&2
    cat "$work/probe.err" >&2
    exit 3
fi

# The program's link, pointed at a file of this script's own (still a `deps/agent-*`, which
# start-up-first orders). cargo prints the link only when it links: the program's crate
# (src/main.rs, a few lines) is made out of date.
touch "$root/src/main.rs"
: >"$work/marker"
(cd "$root" && cargo rustc --quiet --profile "$profile" --bin agent -- -C save-temps --print link-args) \
    >"$work/link-args" 2>"$work/cargo.err" || fail "cargo rustc failed:" "$work/cargo.err"
program=$work/deps/agent-faults
# The line is `VAR="…" … "driver" "arg" …`: the argument after "-o" is replaced, and the
# directory it named (cargo's deps) kept to clean; a strip of the symbol table (`dist`) is
# left out, as perf and nm need the names (it changes no address).
awk -v out="$program" -v asked="$work/asked" '
    /start-up-first/ {
        n = split($0, parts, /" "/)
        line = parts[1]
        for (i = 2; i <= n; i++) {
            arg = parts[i]
            if (i == n) sub(/"$/, "", arg)
            if (arg == "-s" || arg == "-Wl,-s" || arg == "-Wl,--strip-all") {
                if (i == n) line = line "\""
                continue
            }
            if (parts[i - 1] == "-o") {
                closing = (i == n) ? "\"" : ""
                print substr(parts[i], 1, length(parts[i]) - length(closing)) >asked
                parts[i] = out closing
            }
            line = line "\" \"" parts[i]
        }
        print line
        found = 1
    }
    END { exit !found }
' "$work/link-args" >"$work/link.sh" || fail "no link command in cargo's output:" "$work/link-args"
[ -s "$work/asked" ] || fail "no output (-o) in cargo's link command:" "$work/link-args"
kept=$(dirname "$(cat "$work/asked")")
# rustc's temporary directories this cargo run made, and the program crate's intermediate
# files (an interrupted run's too).
{
    find "$kept" -path "$kept/*" -prune -newer "$work/marker" \( -name 'rustc*' -o -name 'rmeta*' \) -type d
    find "$kept" -path "$kept/*" -prune -name 'agent-*rcgu*' -type f
} | sed "s|^$kept/||" >"$work/kept"

# `run NAME ARGS…`: the program against the server, its page faults recorded in NAME.data.
# The runs must take the sandbox's path: a notice that it is unavailable, or a command not
# run, fails the script.
run() {
    name=$1
    shift
    record "$name" "$program" --base-url "$url" --model bench --permission-mode auto "$@" ||
        fail "the run ($*) failed:" "$work/$name.err"
    if grep -q "sandbox is unavailable\|was not allowed to run" "$work/$name.err"; then
        fail "the run ($*) did not take the sandbox's path:" "$work/$name.err"
    fi
}

round=0
added=0
while [ "$round" -lt 15 ]; do
    round=$((round + 1))
    (cd "$root" && env -u AGENT_NO_START_UP_ORDER AGENT_START_UP_KEYS="$keys" sh "$work/link.sh") \
        >"$work/link.err" 2>&1 || fail "the program's link failed:" "$work/link.err"
    if [ "$round" -eq 1 ] && ! has_v0_names "$program"; then
        fail "the program has no v0 symbol names (a RUSTFLAGS of your own replaces .cargo/config.toml's)"
    fi
    # Read from disk as a program is (a file just written sits in large folios, which a
    # fault maps whole): its cached pages dropped (GNU dd; elsewhere they stay), then read
    # back by one start.
    dd if="$program" iflag=nocache count=0 2>/dev/null || true
    "$program" --version >/dev/null
    serve_tools "$bench" "$work/serve.out"
    run plain --no-session -p go
    run session -p go
    run json --no-session --mode json go
    record version "$program" --version || fail "agent --version failed:" "$work/version.err"
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
    # The faults on the program's code, as functions (start-up.awk, mode=faults).
    : >"$work/code"
    for name in plain session json version; do
        perf script -i "$work/$name.data" -F pid,addr,ip,sym,dso --no-demangle \
            >"$work/$name.txt" 2>"$work/script.err" ||
            fail "perf script failed on the $name run:" "$work/script.err"
        awk -v mode=faults -v program="($program)" -f "$here/start-up.awk" "$work/$name.txt" \
            >"$work/$name.code"
        [ -s "$work/$name.code" ] ||
            fail "the $name run's recording has no fault on the program's code: perf script says" "$work/$name.txt"
        cat "$work/$name.code" >>"$work/code"
    done
    awk -v mode=keys -f "$here/start-up.awk" "$work/code" >"$work/found"
    awk 'FILENAME == ARGV[1] { listed[$0] = 1; next } !($0 in listed)' "$keys" "$work/found" >"$work/new"
    added=$(wc -l <"$work/new")
    echo "round $round: $added functions the sandboxed runs fault in added"
    [ "$added" -gt 0 ] || break
    cat "$work/new" >>"$keys"
done
if [ "$added" -gt 0 ]; then
    echo "stopped after $round rounds, the last still adding functions (timing moves a few between runs)"
fi
if [ -n "${PAGE_FAULT_KEYS_PROGRAM:-}" ]; then
    # After a round that added nothing the program has the final list; otherwise once more.
    if [ "$added" -gt 0 ]; then
        (cd "$root" && env -u AGENT_NO_START_UP_ORDER AGENT_START_UP_KEYS="$keys" sh "$work/link.sh") \
            >"$work/link.err" 2>&1 || fail "the program's link failed:" "$work/link.err"
    fi
    cp "$program" "$PAGE_FAULT_KEYS_PROGRAM"
    echo "the program linked with the final list: $PAGE_FAULT_KEYS_PROGRAM"
fi
