// Opens gallery.html (argv[2]) in jsdom with its scripts, clicks each language button of the
// switch and prints, per click, what the page shows: {lang, pressed, states, slack, teams}.
// "slack" and "teams" are the visible text of the first state's two columns (the Teams one as
// drawn by Microsoft's renderer beside the page). Run with NODE_PATH=cards/js/node_modules.
"use strict";

const { JSDOM } = require("jsdom");
const path = require("path");
const url = require("url");

async function main() {
  const file = path.resolve(process.argv[2]);
  const dom = await JSDOM.fromFile(file, {
    runScripts: "dangerously", resources: "usable", url: url.pathToFileURL(file).href,
    virtualConsole: new (require("jsdom").VirtualConsole)(),
    // jsdom has no innerText, which the renderer writes plain text with (rich text runs);
    // the HTML standard's setter: text nodes, each line break a <br>
    beforeParse(window) {
      Object.defineProperty(window.HTMLElement.prototype, "innerText", {
        configurable: true,
        get() { return this.textContent; },
        set(value) {
          this.textContent = "";
          String(value).split(/\r\n|\r|\n/).forEach((part, n) => {
            if (n) this.appendChild(window.document.createElement("br"));
            if (part) this.appendChild(window.document.createTextNode(part));
          });
        },
      });
    },
  });
  await new Promise((resolve) => dom.window.addEventListener("load", resolve));
  const doc = dom.window.document;
  const shown = [];
  // text and the actions' labels (the renderer draws buttons with an aria-label)
  const seen = (el) => [el.textContent, ...[...el.querySelectorAll("button,[role=button]")]
    .map((b) => b.getAttribute("aria-label") || b.title || "")].join("\n");
  const snapshot = (clicked) => {
    const first = doc.querySelector("#gallery .state");
    shown.push({
      clicked,
      lang: doc.getElementById("gallery").dataset.lang,
      html_lang: doc.documentElement.lang,
      pressed: [...doc.querySelectorAll("#langs button")]
        .filter((b) => b.getAttribute("aria-pressed") === "true").map((b) => b.dataset.lang),
      states: doc.querySelectorAll("#gallery .state").length,
      slack: seen(first.querySelector(".slack")),
      teams: seen(first.querySelector(".teams")),
      all: doc.getElementById("gallery").textContent.length,
    });
  };
  snapshot(null);
  for (const button of doc.querySelectorAll("#langs button")) {
    button.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
    snapshot(button.dataset.lang);
  }
  process.stdout.write(JSON.stringify({
    buttons: [...doc.querySelectorAll("#langs button")].map((b) => [b.dataset.lang, b.textContent]),
    shown,
  }));
}

main().catch((error) => { process.stderr.write(String(error.stack || error)); process.exit(1); });
