#!/usr/bin/env bash
# Installs what tests/it/web_client.rs drives the web client with: Debian's chromium (when it
# is missing, running as root and apt-get is there) and playwright-core at the version pinned in
# package-lock.json, into tests/web/node_modules (gitignored). Neither is a hard requirement:
# without them the test says it skipped. Needs the Debian archive and the npm registry.
set -euo pipefail
cd "$(dirname "$0")"

if command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; then
  echo "chromium: $(chromium --version 2>/dev/null || echo present)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "chromium: installing Debian's package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null || echo "apt-get update failed; trying the lists as they are"
  apt-get install -y -q --no-install-recommends chromium >/dev/null ||
    echo "chromium could not be installed: tests/it/web_client.rs will skip"
else
  echo "chromium not found (install Debian's chromium as root): tests/it/web_client.rs will skip"
fi

if command -v npm >/dev/null; then
  bash ../npm-ci.sh . "$@"
else
  echo "npm not found: tests/it/web_client.rs will skip"
fi
