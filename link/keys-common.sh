# What make-start-up-keys.sh and page-fault-keys.sh share (sourced by both, not run): failing
# with a message, a run's home, the v0-names check and the benchmark harness's tool server.

# `fail MESSAGE [FILE]`: the message, the file's text when there is one, and exit 1.
fail() {
    echo "$1" >&2
    [ $# -gt 1 ] && [ -r "$2" ] && cat "$2" >&2
    exit 1
}

# `in_home DIR COMMAND…`: COMMAND with DIR as its home, given as a user's is (HOME, not
# AGENT_HOME: finding the agent's directories from it is part of every start), so the user's
# configuration and sessions play no part; and with the sandbox as this machine has it.
in_home() {
    in_home_dir=$1
    shift
    env -u AGENT_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME \
        -u AGENT_SANDBOX_SIMULATE_UNAVAILABLE HOME="$in_home_dir" "$@"
}

# `has_v0_names PROGRAM`: whether its symbols are v0-mangled (this checkout's
# .cargo/config.toml; a RUSTFLAGS of the user's own replaces it).
has_v0_names() {
    nm --defined-only "$1" 2>/dev/null | awk '$3 ~ /^_R/ { found = 1; exit } END { exit !found }'
}

# `serve_tools BENCH OUT`: the benchmark harness's loopback server of tool rounds
# (`scenarios serve tools`) in the background, its output in OUT; sets `server` (its pid,
# for the caller to stop) and `url`.
serve_tools() {
    : >"$2"
    "$1" serve tools >"$2" 2>&1 &
    server=$!
    url=
    for _ in $(seq 1 100); do
        url=$(awk '/^serving tool rounds on / { print $5; exit }' "$2")
        [ -n "$url" ] && return 0
        sleep 0.1
    done
    fail "the benchmark's server did not start:" "$2"
}
