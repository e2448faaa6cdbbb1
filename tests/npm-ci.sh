#!/usr/bin/env bash
# `npm ci` in the directory given (one of the tests' package directories), once: two test
# runs in one checkout (two terminals, or `cargo test` beside `cargo bench`) may both find
# the packages missing. The first installs while the others wait for its lock; they then find
# the install done for this package-lock.json (node_modules/.installed) and every file they
# name after the directory there, and leave it alone — a second `npm ci` would delete the
# packages under the servers the first run is using. `rm -rf DIR/node_modules` forces a
# fresh install.
set -euo pipefail
cd "$1"
shift
if command -v flock >/dev/null; then
  exec 9>node_modules.lock
  flock 9
else
  echo "flock not found: two test runs installing at once here may disturb each other" >&2
fi
installed() {
  [ -f node_modules/.installed ] && cmp -s package-lock.json node_modules/.installed || return 1
  for needed in "$@"; do
    [ -e "$needed" ] || return 1
  done
}
if installed "$@"; then
  exit 0
fi
rm -f node_modules/.installed
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json node_modules/.installed
