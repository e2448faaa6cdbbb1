#!/bin/sh
# Adds to a start-up list (start-up.keys) the functions a sandboxed headless run with tool
# rounds faults in, which callgrind cannot show: valgrind does not know Landlock's system
# calls, so under it the sandbox is unavailable and its code in the agent never runs.
#
#   link/page-fault-keys.sh KEYS BENCH     (make-start-up-keys.sh runs it)
#
# KEYS is the list to extend (in place); BENCH the benchmark harness, whose loopback server
# (`scenarios serve tools`) answers. The program is this checkout's release build: its link
# is repeated with the list as it grows (`cargo rustc --release --bin agent -- -C save-temps
# --print link-args` gives the command and keeps the objects it names).
#
# perf records the page faults of the agent process (`-e page-faults -d`: the faulting
# address of each). A fault whose address is the instruction's own is code being read in; its
# function, when not yet listed, is added. A fault maps the whole 64 kB window around it (the
# kernel's fault-around), hiding the other functions in that window, so the program is linked
# again with the longer list and run again, until a round finds nothing new (at most 15).
# Each round runs `-p` with and without a session and `--mode json`, the sandbox on.
#
# Written by hand: what is asked (which functions this program's sandboxed path runs, as
# link-order keys) is particular to this build; perf and the linker are the tools.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 KEYS BENCH" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
keys=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bench=$2

fail() {
    echo "$1" >&2
    [ $# -gt 1 ] && [ -r "$2" ] && cat "$2" >&2
    exit 1
}

for tool in perf cargo dd nm awk; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed: not found"
done

work=$(mktemp -d)
server=
deps=
cleanup() {
    if [ -n "$server" ]; then kill -INT "$server" 2>/dev/null || true; fi
    # What -C save-temps kept in the program's directory: rustc's temporary directories and the
    # program crate's intermediate files, which were not there before.
    if [ -n "$deps" ] && [ -r "$work/before" ]; then
        ls "$deps" | awk 'NR == FNR { before[$0] = 1; next }
            !($0 in before) && ($0 ~ /^(rustc|rmeta)[A-Za-z0-9]+$/ || $0 ~ /^agent-[0-9a-f]+\..*rcgu/)' \
            "$work/before" - | while read -r name; do rm -rf "${deps:?}/$name"; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
mkdir -p "$work/home" "$work/cwd" "$work/deps"

# The program's link, pointed at a file of this script's own (still a `deps/agent-*`, which
# start-up-first orders).
deps=${CARGO_TARGET_DIR:-$root/target}/release/deps
mkdir -p "$deps"
ls "$deps" >"$work/before"
# cargo prints the link only when it links: the program's crate (src/main.rs, a few lines)
# is made out of date.
touch "$root/src/main.rs"
(cd "$root" && cargo rustc --quiet --release --bin agent -- -C save-temps --print link-args) \
    >"$work/link-args" 2>"$work/cargo.err" || fail "cargo rustc failed:" "$work/cargo.err"
program=$work/deps/agent-faults
awk -v out="$program" '
    /start-up-first/ {
        # The line is `VAR="…" … "driver" "arg" …`: replace the argument after "-o".
        n = split($0, parts, /" "/)
        line = parts[1]
        for (i = 2; i <= n; i++) {
            if (parts[i - 1] == "-o") parts[i] = out
            line = line "\" \"" parts[i]
        }
        print line
        found = 1
    }
    END { exit !found }
' "$work/link-args" >"$work/link.sh" || fail "no link command in cargo's output:" "$work/link-args"
# `run NAME ARGS…`: the program against the server, its page faults recorded in NAME.data.
run() {
    name=$1
    shift
    # A home of its own, given as a user's is (HOME, not AGENT_HOME: finding the agent's
    # directories from it is part of every start).
    (cd "$work/cwd" && env -u AGENT_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME \
        HOME="$work/home" perf record --quiet -e page-faults -c 1 -d \
        -o "$work/$name.data" -- "$program" --base-url "$url" --model bench \
        --permission-mode auto "$@" >/dev/null 2>"$work/run.err") ||
        fail "the run ($*) failed:" "$work/run.err"
}

round=0
while [ "$round" -lt 15 ]; do
    round=$((round + 1))
    (cd "$root" && AGENT_START_UP_KEYS=$keys sh "$work/link.sh") >"$work/link.err" 2>&1 ||
        fail "the program's link failed:" "$work/link.err"
    # Read from disk as a program is (a file just written sits in large folios, which a
    # fault maps whole): its cached pages dropped, then read back by one start.
    dd if="$program" iflag=nocache count=0 2>/dev/null
    "$program" --version >/dev/null
    : >"$work/serve.out"
    "$bench" serve tools >"$work/serve.out" 2>&1 &
    server=$!
    url=
    for _ in $(seq 1 100); do
        url=$(awk '/^serving tool rounds on / { print $5; exit }' "$work/serve.out")
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || fail "the benchmark's server did not start:" "$work/serve.out"
    run plain --no-session -p go
    run session -p go
    run json --no-session --mode json go
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
    # `perf script` lines: pid, the faulting address and its symbol (dso), the instruction's
    # address and its symbol (dso). The agent is the first process of each recording.
    for name in plain session json; do
        perf script -i "$work/$name.data" -F pid,addr,ip,sym,dso --no-demangle 2>/dev/null |
            awk -v program="($program)" '
                NR == 1 { agent = $1 }
                $1 == agent && NF >= 6 && $2 == $(NF - 2) && $NF == program && $(NF - 1) != "[unknown]" {
                    print $(NF - 1)
                }'
    done | awk -v mode=keys -f "$here/start-up.awk" >"$work/found"
    awk 'NR == FNR { listed[$0] = 1; next } !($0 in listed)' "$keys" "$work/found" >"$work/new"
    added=$(wc -l <"$work/new")
    echo "round $round: $added functions the sandboxed runs fault in added"
    [ "$added" -gt 0 ] || break
    cat "$work/new" >>"$keys"
done
