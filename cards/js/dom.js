// A browser for Microsoft's Adaptive Cards renderer under node: jsdom's window as the global
// scope, with every DOM class the renderer checks with "instanceof", and innerText, which jsdom
// does not implement (the renderer writes plain text with it: without it a TextRun or a
// TextBlock with no markdown processor would render empty).
"use strict";

const { JSDOM } = require("jsdom");

const dom = new JSDOM("<!DOCTYPE html><html><body></body></html>");
global.window = dom.window;
global.document = dom.window.document;
global.navigator = dom.window.navigator;
for (const name of Object.getOwnPropertyNames(dom.window)) {
  // The renderer checks "instanceof HTMLInputElement" and friends, so every DOM class is needed.
  if (/^(HTML|SVG|Node|Element|Event|Text|DocumentFragment)/.test(name) && !(name in global)) {
    global[name] = dom.window[name];
  }
}

// The HTML standard's innerText setter: the text as text nodes, each line break a <br>.
Object.defineProperty(dom.window.HTMLElement.prototype, "innerText", {
  configurable: true,
  get() { return this.textContent; },
  set(value) {
    this.textContent = "";
    String(value).split(/\r\n|\r|\n/).forEach((part, n) => {
      if (n) this.appendChild(dom.window.document.createElement("br"));
      if (part) this.appendChild(dom.window.document.createTextNode(part));
    });
  },
});

// The renderer logs to the console; keep stdout for the report alone.
console.log = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
console.warn = console.log;

module.exports = { dom };
