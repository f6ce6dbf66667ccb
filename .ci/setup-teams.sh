#!/usr/bin/env bash
# Installs what the Teams end-to-end tests need (tests/teams_playground): the Microsoft 365 Agents
# Playground, pinned by tests/teams_playground/npm/package-lock.json, and Debian's chromium for the
# test that drives the Playground's web UI (Playwright comes from PyPI with the dev extra; never
# `playwright install`, which downloads a browser build and fails here). Idempotent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../tests/teams_playground/npm"
stamp=node_modules/.clarify-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f node_modules/@microsoft/m365agentsplayground/cli.js ]]; then
    echo "setup-teams: the Agents Playground is up to date"
else
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
    echo "setup-teams: installed @microsoft/m365agentsplayground $(node -p 'require("@microsoft/m365agentsplayground/package.json").version')"
fi
# chromium: only where we are root with apt (CI); elsewhere the browser tests (the Playground's,
# tests/sandbox) skip without it
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
            || echo "setup-teams: chromium not installed" >&2
    else
        echo "setup-teams: no chromium; the Playground browser test will be skipped" >&2
    fi
fi
