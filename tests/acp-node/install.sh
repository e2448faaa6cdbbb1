#!/usr/bin/env bash
# Installs the pinned ACP TypeScript SDK (package-lock.json) into tests/acp-node/node_modules
# (gitignored), for tests/it/acp_node.rs. Needs node and npm, and the npm registry.
set -euo pipefail
cd "$(dirname "$0")"
bash ../npm-ci.sh . "$@"
