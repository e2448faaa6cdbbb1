#!/bin/sh
# Makes link/start-up.keys again: the functions `agent` runs when it starts, as keys
# (start-up.awk). Run it after changes to what the program does at start-up; the list still
# works when it is out of date, it just places less of the start.
#
#   cargo build --release && cargo bench --bench scenarios --no-run
#   link/make-start-up-keys.sh [--with-dist] [path/to/agent]
#
# It runs the program under valgrind's callgrind (every function executed is recorded):
# `agent --version`; the interactive interface started in a tmux pane (a tmux server of its
# own, without the user's tmux.conf), left until its prompt is drawn and quit with ctrl+d;
# and, when the benchmark harness is built, a `-p` run with three `bash` tool rounds against
# the harness's loopback server. It needs valgrind, tmux and an optimised build with v0 symbol
# names (this checkout's .cargo/config.toml gives them). The list keeps the runs' order (each
# run's functions as callgrind's files list them, which is close to the order they ran).
# Then, with perf, page-fault-keys.sh adds what `-p` and `--mode json` runs fault in with the
# sandbox on (its code never runs under valgrind), and `--version`, relinking this checkout's
# release build with the list as it grows. The new list changes what build.rs watches, so the
# next `cargo build --release` compiles the package again: about five minutes. `--with-dist`
# also runs it on the `dist` build (what the README's `cargo install --profile dist` makes),
# whose functions after whole-program inlining are others: a few minutes more with its
# dependencies built, ten without. PAGE_FAULT_KEYS_PROGRAM (page-fault-keys.sh) applies to the
# last pass.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/keys-common.sh"
target=${CARGO_TARGET_DIR:-$root/target}
# cargo takes a relative CARGO_TARGET_DIR from where it is run: from here, as page-fault-keys.sh
# runs it elsewhere.
case $target in
/*) ;;
*) target=$(pwd)/$target && export CARGO_TARGET_DIR="$target" ;;
esac
program=$target/release/agent
with_dist=
while [ $# -gt 0 ]; do
    case $1 in
    --with-dist) with_dist=1 ;;
    -*) echo "unknown option $1; usage: $0 [--with-dist] [path/to/agent]" >&2 && exit 2 ;;
    *) break ;;
    esac
    shift
done
[ $# -le 1 ] || { echo "usage: $0 [--with-dist] [path/to/agent]" >&2; exit 2; }
if [ $# -gt 0 ]; then
    [ -d "$(dirname "$1")" ] || { echo "no directory $(dirname "$1") for the program $1" >&2; exit 1; }
    program=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fi
keys="$here/start-up.keys"

for tool in valgrind tmux nm awk; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed: not found"
done
[ -x "$program" ] || fail "no program at $program: cargo build --release first"
if ! has_v0_names "$program"; then
    fail "$program has no v0 symbol names: build it in this checkout (.cargo/config.toml)"
fi

work=$(mktemp -d)
session="start-up-keys-$$"
server=
# Under `set -e` a failing step would end the clean-up early: each may fail.
cleanup() {
    tmux -L "$session" kill-server 2>/dev/null || true
    if [ -n "$server" ]; then kill -INT "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
mkdir -p "$work/home" "$work/cwd"

# `profile NAME PROGRAM ARGS…`: runs it under callgrind in a home and directory of its own,
# its files named NAME.<pid>.out.
profile() {
    name=$1
    shift
    (cd "$work/cwd" && in_home "$work/home" valgrind --tool=callgrind --demangle=no \
        --trace-children=yes "--callgrind-out-file=$work/$name.%p.out" "$@")
}

profile 1-version "$program" --version >/dev/null 2>"$work/version.err" ||
    fail "agent --version failed under valgrind:" "$work/version.err"

# The interface, in a pane of a tmux server of this script's own.
cat >"$work/tui.sh" <<SCRIPT
#!/bin/sh
. "$here/keys-common.sh"
cd "$work/cwd" || exit 1
in_home "$work/home" env OPENAI_API_KEY=start-up-keys valgrind --tool=callgrind \
    --demangle=no --trace-children=yes "--callgrind-out-file=$work/2-tui.%p.out" \
    "$program" --provider openai --model gpt-4o --no-session 2>"$work/tui.err"
SCRIPT
tmux -L "$session" -f /dev/null new-session -d -s "$session" -x 120 -y 40 "sh '$work/tui.sh'"
ready=
for _ in $(seq 1 600); do
    if tmux -L "$session" capture-pane -p -t "$session" 2>/dev/null | grep -q "Ask anything"; then
        ready=1
        break
    fi
    sleep 0.1
done
[ -n "$ready" ] || fail "the interface did not draw its prompt in 60 s under valgrind:" "$work/tui.err"
sleep 1
tmux -L "$session" send-keys -t "$session" C-d
for _ in $(seq 1 300); do
    tmux -L "$session" has-session -t "$session" 2>/dev/null || break
    sleep 0.1
done
if tmux -L "$session" has-session -t "$session" 2>/dev/null; then
    fail "the interface did not quit within 30 s of ctrl+d:" "$work/tui.err"
fi

# Then a headless run with tool rounds (`-p`, three `bash` calls, an answer), when the
# benchmark harness is built (`cargo bench --bench scenarios --no-run`; the newest build of it
# is used): its loopback server (`scenarios serve tools`) answers.
bench=$(ls -t "$target"/release/deps/scenarios-* 2>/dev/null | grep -v '\.d$' | head -n 1 || true)
if [ -n "$bench" ]; then
    serve_tools "$bench" "$work/serve.out"
    # Valgrind does not know Landlock's system calls, so under it the sandbox is unavailable
    # and commands would wait for an approval `-p` cannot give: the run goes without the
    # sandbox (its set-up in the supervisor is not profiled).
    profile 3-tools "$program" --base-url "$url" --model bench --permission-mode auto \
        --sandbox off --no-session -p go >/dev/null 2>"$work/tools.err" ||
        fail "the -p run with tool rounds failed under valgrind:" "$work/tools.err"
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
else
    echo "no benchmark harness built (cargo bench --bench scenarios --no-run): no -p run profiled" >&2
fi

# Callgrind's files name each object (`ob=`) and function (`fn=`, `cfn=`) once, then refer to
# them by number: `(12) name` the first time, `(12)` after. The program's own functions (its
# C ones too: tree-sitter's, ring's, whose names are their keys), run by run.
for file in "$work"/1-version.*.out "$work"/2-tui.*.out "$work"/3-tools.*.out; do
    [ -r "$file" ] || continue
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
        /^fn=/  {
            name = named(substr($0, 4), functions)
            sub(/\047[0-9]+$/, "", name)    # the recursion level callgrind appends
            # Not an address (no symbol there) or a pseudo-function like "(below main)".
            if (object == program && name != "" && name !~ /^(0x|\()/) print name
        }
    ' "$file"
done >"$work/names"

count=$(awk -v mode=keys -f "$here/start-up.awk" "$work/names" | tee "$work/keys" | wc -l)
[ "$count" -gt 100 ] || fail "only $count start-up functions found: not replacing $keys"
if [ -r "$keys" ]; then
    kept=$(awk 'NR == FNR { if ($0 !~ /^#/) old[$0] = 1; next } ($0 in old) { n++ } END { print n + 0 }' "$keys" "$work/keys")
    echo "$count start-up functions; $kept of them were in the previous list"
fi
{
    echo "# The functions agent runs at start-up, as keys (link/start-up.awk): callgrind's runs one after"
    echo "# the other, then what sandboxed runs fault in (page-fault-keys.sh)."
    echo "# Made by link/make-start-up-keys.sh; read by link/start-up-first when the program is linked."
    cat "$work/keys"
} >"$work/list"

# Then what the sandboxed path faults in (page-fault-keys.sh), when perf can record page faults
# here (it exits 3 when it cannot) and the harness is built; without them the list has
# callgrind's runs only. The list replaces the old one only once everything asked has worked.
status=3
if [ -n "$bench" ]; then
    status=0
    if [ -n "$with_dist" ]; then
        env -u PAGE_FAULT_KEYS_PROGRAM "$here/page-fault-keys.sh" "$work/list" "$bench" || status=$?
        if [ "$status" -eq 0 ]; then
            "$here/page-fault-keys.sh" "$work/list" "$bench" dist || status=$?
        fi
    else
        "$here/page-fault-keys.sh" "$work/list" "$bench" || status=$?
    fi
fi
case $status in
0) ;;
3)
    [ -z "$with_dist" ] ||
        fail "--with-dist needs the page-fault pass (perf and the benchmark harness): $keys is left as it was"
    echo "the sandboxed path's functions are not added (page-fault-keys.sh needs perf and the benchmark harness)" >&2
    ;;
*) fail "page-fault-keys.sh failed: $keys is left as it was" ;;
esac
cp "$work/list" "$keys"
echo "wrote $keys ($(grep -vc '^#' "$keys") keys)"
