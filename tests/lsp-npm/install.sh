#!/usr/bin/env bash
# Installs the real language servers the integration tests run against (tests/it/lsp_real.rs):
# pyright, typescript-language-server and typescript, at the versions pinned in
# package-lock.json, into tests/lsp-npm/node_modules (gitignored). Needs node and npm, and
# the npm registry.
set -euo pipefail
cd "$(dirname "$0")"
bash ../npm-ci.sh . "$@"
