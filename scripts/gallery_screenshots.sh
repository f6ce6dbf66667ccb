#!/usr/bin/env bash
# Renders the card gallery (clarify-bot preview) and screenshots it in headless Chromium into
# docs/cards/. Needs Debian's chromium and fonts-noto-color-emoji (installed here where we are
# root with apt; without the font every emoji is a box) and the renderer from
# .ci/setup-cards.sh. Not part of CI. The Teams Playground screenshot (docs/teams-playground.png)
# is made by its test: CLARIFY_UPDATE_SCREENSHOTS=1 ./dev test
# tests/teams_playground/test_playground_browser.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "Noto Color Emoji"; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
    else
        echo "gallery_screenshots: needs chromium and fonts-noto-color-emoji (Debian)" >&2
        exit 1
    fi
fi
out="$(mktemp -d)"
profile="$(mktemp -d)"
trap 'rm -rf "$out" "$profile"' EXIT
bash "$root/.ci/setup-cards.sh"
"$root/.venv/bin/clarify-bot" preview --out "$out/gallery"
shot() {  # name, height, state-name prefixes to show
    local url="file://$out/gallery/gallery.html?only=$3"
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --hide-scrollbars --window-size="1200,$2" \
        --screenshot="$root/docs/cards/$1.png" "$url" 2>/dev/null
}
mkdir -p "$root/docs/cards"
shot gallery-questions 2000 "question_,custom_"
shot gallery-outcomes-1 1900 "outcome_recorded,outcome_first,outcome_binding,outcome_attestation,outcome_conflict"
shot gallery-outcomes-2 1600 "outcome_steward,outcome_moved,outcome_identity,outcome_recording"
shot gallery-stewards 2450 "steward_escalation,steward_conflict"
shot gallery-stewards-2 1600 "steward_quorum,steward_notice,steward_dead"
shot gallery-digest 2000 "digest"
echo "screenshots written to docs/cards/"
