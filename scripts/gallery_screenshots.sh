#!/usr/bin/env bash
# Renders the card gallery (clarify-bot preview) and screenshots it into docs/cards/, then the
# sandbox's pages into docs/sandbox/ (its browser tests, below). Each gallery page
# is the gallery limited to some states (?only=) in one language (?lang=), shot by headless
# Chromium running in that language's locale (so the Teams date inputs read as a person's client
# draws them), as tall as its cards (up to a set height), then quantised by pngquant so each
# PNG stays small. Needs Debian's chromium, chromium-l10n (the other locales),
# fonts-noto-color-emoji (without it every emoji is a box) and pngquant, installed here where
# we are root with apt; playwright from the dev extra (it drives Debian's chromium: never
# `playwright install`); the renderer from .ci/setup-cards.sh. Not part of CI. The Teams
# Playground screenshot (docs/teams-playground.png) is made by its test:
# CLARIFY_UPDATE_SCREENSHOTS=1 ./dev test tests/teams_playground/test_playground_browser.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v chromium >/dev/null 2>&1 || ! command -v pngquant >/dev/null 2>&1 \
        || [ ! -f /usr/lib/chromium/locales/de.pak ] \
        || ! fc-list 2>/dev/null | grep -qi "Noto Color Emoji"; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -qq chromium chromium-l10n fonts-noto-color-emoji pngquant >/dev/null
    else
        echo "gallery_screenshots: needs Debian's chromium, chromium-l10n," \
            "fonts-noto-color-emoji and pngquant" >&2
        exit 1
    fi
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
bash "$root/.ci/setup-cards.sh"
"$root/.venv/bin/clarify-bot" preview --out "$out/gallery"
mkdir -p "$root/docs/cards"
"$root/.venv/bin/python" - "$out/gallery/gallery.html" "$root/docs/cards" <<'PY'
import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

LOCALES = {"en": "en-GB", "de": "de-DE", "fr": "fr-FR"}
QUESTIONS = "question_normal,question_critical,question_awaiting,custom_"
REMINDERS = "question_reminded,reminder"
# name, language, at most this tall (px), the prefixes of the states to show
SHOTS = [
    ("gallery-questions", "en", 2600, QUESTIONS),
    ("gallery-questions-de", "de", 2600, QUESTIONS),
    ("gallery-questions-fr", "fr", 2600, QUESTIONS),
    ("gallery-reminders", "en", 1800, REMINDERS),
    ("gallery-reminders-de", "de", 1800, REMINDERS),
    ("gallery-reminders-fr", "fr", 1800, REMINDERS),
    ("gallery-outcomes-1", "en", 2400,
     "outcome_recorded,outcome_first,outcome_binding,outcome_attestation,outcome_conflict"),
    ("gallery-outcomes-2", "en", 2400, "outcome_steward,outcome_moved,outcome_identity,"
     "outcome_recording,outcome_pending,outcome_passed"),
    ("gallery-stewards", "en", 2600, "steward_escalation,steward_conflict"),
    ("gallery-stewards-2", "en", 2400, "steward_quorum,steward_notice,steward_dead"),
    ("gallery-digest", "en", 2400, "digest"),
    ("gallery-reach", "en", 2600, "steward_reach,steward_queue"),
    ("gallery-reach-fr", "fr", 2600, "steward_reach,steward_queue"),
]
page_file, target = Path(sys.argv[1]), Path(sys.argv[2])
with sync_playwright() as driver:
    for name, lang, most, only in SHOTS:
        # the browser in the person's locale, as a chat client is: its date pickers follow it
        browser = driver.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", f"--lang={LOCALES[lang]}"],
            env={**os.environ, "LANGUAGE": LOCALES[lang].replace("-", "_")})
        context = browser.new_context(viewport={"width": 1200, "height": 900},
                                      locale=LOCALES[lang])
        # the page is offline: anything but its own files is refused
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            "file:") else route.abort())
        page = context.new_page()
        page.goto(f"{page_file.as_uri()}?only={only}&lang={lang}")
        page.wait_for_load_state("load")
        height = min(most, page.evaluate("document.documentElement.scrollHeight"))
        page.screenshot(path=str(target / f"{name}.png"),
                        clip={"x": 0, "y": 0, "width": 1200, "height": height}, full_page=True)
        browser.close()
PY
for png in "$root"/docs/cards/gallery-*.png; do
    pngquant --force --skip-if-larger --strip --quality=60-90 --output "$png" "$png" || true
done
ls -l "$root"/docs/cards/gallery-*.png
big="$(find "$root/docs/cards" -name 'gallery-*.png' -size +300k)"
[ -z "$big" ] || echo "gallery_screenshots: over 300 KB, lower a height or split the page: $big" >&2
echo "screenshots written to docs/cards/"

# The sandbox (docs/sandbox/): its browser tests write the screenshots as they click through it
# (Debian's chromium, the fonts above), then each is quantised as the gallery's are.
CLARIFY_UPDATE_SCREENSHOTS=1 "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$root/tests/sandbox/test_sandbox_browser.py"
for png in "$root"/docs/sandbox/*.png; do
    pngquant --force --skip-if-larger --strip --quality=60-90 --output "$png" "$png" || true
done
ls -l "$root"/docs/sandbox/*.png
echo "screenshots written to docs/sandbox/"
