// Draws Adaptive Cards as a Teams client reads them: Microsoft's renderer (npm "adaptivecards")
// with markdown-it as its markdown processor (CommonMark, plus the strikethrough and autolinks
// of links written out in full that Teams adds), so a test sees what text in a card becomes.
//
// Reads {"name": card, ...} as JSON on stdin, where a card may also be {"$markdown": "text"}
// (an activity's own text); prints {"name": {"html": …, "texts": [...]}, ...}: the card's HTML
// and the text of each text element (TextBlock, RichTextBlock), each action's title appended.
"use strict";

require("./dom.js");
const AC = require("adaptivecards/dist/adaptivecards.js");
const markdownIt = require("markdown-it");

const md = markdownIt({ html: false, linkify: true });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
AC.AdaptiveCard.onProcessMarkdown = (text, result) => {
  result.outputHtml = md.render(text);
  result.didProcess = true;
};
const LANG = AC.CardElement.langProperty.regEx;  // see validate.js: a global-flag regex

function draw(json) {
  if (json && typeof json["$markdown"] === "string") {
    const holder = document.createElement("div");
    holder.innerHTML = md.render(json["$markdown"]);
    return { html: holder.innerHTML, texts: [holder.textContent] };
  }
  LANG.lastIndex = 0;
  const card = new AC.AdaptiveCard();
  card.parse(json, new AC.SerializationContext(AC.Versions.v1_5));
  const element = card.render();
  if (!element) return { html: "", texts: [] };
  const texts = [...element.querySelectorAll(".ac-textBlock, .ac-richTextBlock")]
    .map((node) => node.textContent);
  for (const button of element.querySelectorAll("button")) {
    texts.push(button.getAttribute("aria-label") || button.title || button.textContent);
  }
  return { html: element.outerHTML, texts };
}

function main() {
  const chunks = [];
  process.stdin.on("data", (chunk) => chunks.push(chunk));
  process.stdin.on("end", () => {
    const cards = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const drawn = {};
    for (const [name, json] of Object.entries(cards)) drawn[name] = draw(json);
    process.stdout.write(JSON.stringify(drawn));
  });
}

main();
