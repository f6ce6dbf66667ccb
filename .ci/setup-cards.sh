#!/usr/bin/env bash
# Installs what the cards tests need: Microsoft's Adaptive Cards renderer and jsdom, pinned by
# cards/js/package-lock.json. Idempotent: skips npm when the installed tree matches the lock.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../cards/js"
stamp=node_modules/.clarify-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f node_modules/adaptivecards/dist/adaptivecards.min.js ]]; then
    echo "setup-cards: cards/js is up to date"
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
echo "setup-cards: installed cards/js ($(node -p 'require("adaptivecards/package.json").version') adaptivecards)"
