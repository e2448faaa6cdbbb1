#!/usr/bin/env bash
# Installs the real MCP servers the integration tests run against (tests/it/mcp_real.rs), at the
# versions pinned in package-lock.json, into tests/npm/node_modules (not committed).
set -euo pipefail
cd "$(dirname "$0")"
bash ../npm-ci.sh . "$@"
