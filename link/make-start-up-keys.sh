#!/bin/sh
# Makes link/start-up.keys again: the functions `agent` runs when it starts, as keys
# (start-up.awk), in the order they first ran. Run it after changes to what the program does
# at start-up; the list still works when it is out of date, it just places less of the start.
#
#   cargo build --release && cargo bench --bench scenarios --no-run
#   link/make-start-up-keys.sh [path/to/agent]
#
# It runs the program under valgrind's callgrind (every function executed is recorded):
# `agent --version`; the interactive interface started in a tmux pane, left until its prompt
# is drawn and quit with ctrl+d; and, when the benchmark harness is built, a `-p` run with
# three `bash` tool rounds against the harness's loopback server. It needs valgrind, tmux and
# an optimised build with v0 symbol names (this checkout's .cargo/config.toml gives them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
program=$(cd "$here/.." && pwd)/target/release/agent
[ $# -gt 0 ] && program=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
keys="$here/start-up.keys"

for tool in valgrind tmux nm awk; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool is needed: not found" >&2; exit 1; }
done
[ -x "$program" ] || { echo "no program at $program: cargo build --release first" >&2; exit 1; }
if ! nm --defined-only "$program" | awk '$3 ~ /^_R/ { found = 1; exit } END { exit !found }'; then
    echo "$program has no v0 symbol names: build it in this checkout (.cargo/config.toml)" >&2
    exit 1
fi

work=$(mktemp -d)
session="start-up-keys-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/cwd"
callgrind="valgrind --tool=callgrind --demangle=no --trace-children=yes --callgrind-out-file=$work/cg.%p.out"

# A home and a provider of its own, so the user's configuration and sessions play no part.
(cd "$work/cwd" && env AGENT_HOME="$work/home" $callgrind "$program" --version) \
    >/dev/null 2>"$work/version.err"
mv "$work"/cg.*.out "$work/1-version.out" 2>/dev/null ||
    { echo "callgrind recorded nothing for --version:" >&2; cat "$work/version.err" >&2; exit 1; }

tmux new-session -d -s "$session" -x 120 -y 40 -c "$work/cwd" \
    "env AGENT_HOME=$work/home OPENAI_API_KEY=start-up-keys $callgrind $program --provider openai --model gpt-4o --no-session 2>$work/tui.err"
ready=
for _ in $(seq 1 600); do
    if tmux capture-pane -p -t "$session" 2>/dev/null | grep -q "Ask anything"; then
        ready=1
        break
    fi
    sleep 0.1
done
[ -n "$ready" ] || { echo "the interface did not draw its prompt in 60 s under valgrind" >&2; exit 1; }
sleep 1
tmux send-keys -t "$session" C-d
for _ in $(seq 1 300); do
    tmux has-session -t "$session" 2>/dev/null || break
    sleep 0.1
done

# Then a headless run with tool rounds (`-p`, three `bash` calls, an answer), when the
# benchmark harness is built (`cargo bench --bench scenarios --no-run`): its loopback server
# (`scenarios serve tools`) answers.
root=$(cd "$here/.." && pwd)
bench=$(ls -t "$root"/target/release/deps/scenarios-* 2>/dev/null | grep -v '\.d$' | head -n 1 || true)
if [ -n "$bench" ]; then
    "$bench" serve tools >"$work/serve.out" 2>&1 &
    server=$!
    url=
    for _ in $(seq 1 100); do
        url=$(awk '/^serving tool rounds on / { print $5; exit }' "$work/serve.out")
        [ -n "$url" ] && break
        sleep 0.1
    done
    if [ -n "$url" ]; then
        # Valgrind does not know Landlock's system calls, so under it the sandbox is
        # unavailable and commands would wait for an approval `-p` cannot give: the run
        # goes without the sandbox (its set-up in the supervisor is not profiled).
        (cd "$work/cwd" && env AGENT_HOME="$work/home" $callgrind "$program" --base-url "$url" \
            --model bench --permission-mode auto --sandbox off --no-session -p go) \
            >/dev/null 2>"$work/tools.err" ||
            echo "the -p run with tool rounds failed (see below); its functions are still listed" >&2
    else
        echo "the benchmark's server did not start: no -p run profiled" >&2
    fi
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
else
    echo "no benchmark harness built (cargo bench --bench scenarios --no-run): no -p run profiled" >&2
fi

# Callgrind's files name each object (`ob=`) and function (`fn=`, `cfn=`) once, then refer to
# them by number: `(12) name` the first time, `(12)` after. The program's own functions (its
# C ones too: tree-sitter's, ring's, whose names need no key), in
# the order the files first name them (the version's run first, then the interface's, then
# `-p`'s).
for file in "$work/1-version.out" "$work"/cg.*.out; do
    awk -v program="$(basename "$program")" '
        function named(text, table,    id) {
            if (match(text, /^\([0-9]+\)/)) {
                id = substr(text, 2, RLENGTH - 2)
                if (length(text) > RLENGTH + 1) table[id] = substr(text, RLENGTH + 2)
                return table[id]
            }
            return text
        }
        /^ob=/  { object = named(substr($0, 4), objects); sub(/.*\//, "", object); next }
        /^cob=/ { named(substr($0, 5), objects); next }
        /^cfn=/ { named(substr($0, 5), functions); next }
        /^fn=/  { name = named(substr($0, 4), functions)
                  sub(/\x27[0-9]+$/, "", name)   # a recursion level: `name\x272`
                  if (object == program && name != "" && name !~ /^0x/) print name }
    ' "$file"
done >"$work/names"

count=$(awk -v mode=keys -f "$here/start-up.awk" "$work/names" | tee "$work/keys" | wc -l)
[ "$count" -gt 100 ] || { echo "only $count start-up functions found: not replacing $keys" >&2; exit 1; }
if [ -r "$keys" ]; then
    kept=$(awk 'NR == FNR { if ($0 !~ /^#/) old[$0] = 1; next } ($0 in old) { n++ } END { print n + 0 }' "$keys" "$work/keys")
    echo "$count start-up functions; $kept of them were in the previous list"
fi
{
    echo "# The functions agent runs at start-up, as keys (link/start-up.awk), in the order they first ran."
    echo "# Made by link/make-start-up-keys.sh; read by link/start-up-first when the program is linked."
    cat "$work/keys"
} >"$keys"
echo "wrote $keys"
