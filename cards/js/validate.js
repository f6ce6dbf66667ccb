// Validates Adaptive Cards with Microsoft's official JavaScript renderer (npm "adaptivecards").
//
// Reads {"name": card, ...} as JSON on stdin and prints {"name": [problem, ...], ...}.
// A card passes when the renderer, targeting schema version 1.5, (1) parses it without any
// parse or validation event, (2) knows every property the card uses for the element or action
// it sits on, in a version no newer than 1.5, and (3) renders it to a DOM element (jsdom).
"use strict";

require("./dom.js");

const AC = require("adaptivecards/dist/adaptivecards.js");

const TARGET = AC.Versions.v1_5;
const ROOT_EXTRA = new Set(["$schema", "type", "body", "actions"]);
// Child collections that containers parse by hand rather than through their property schema.
const CHILDREN = {
  Container: ["items"],
  Column: ["items"],
  ColumnSet: ["columns"],
  ActionSet: ["actions"],
  RichTextBlock: ["inlines"],
  "Action.ShowCard": ["card"],
};

function propertyNames(obj) {
  const schema = obj.getSchema();
  const names = new Map();
  for (let i = 0; i < schema.getCount(); i++) {
    const property = schema.getItemAt(i);
    names.set(property.name, property.targetVersion);
  }
  return names;
}

function checkKeys(obj, source, where, problems, extra) {
  const known = propertyNames(obj);
  for (const key of Object.keys(source)) {
    if (extra.has(key)) continue;
    if (!known.has(key)) {
      problems.push(`${where}: property "${key}" is not in the renderer's schema`);
    } else if (known.get(key).compareTo && known.get(key).compareTo(TARGET) > 0) {
      problems.push(`${where}: property "${key}" needs a version newer than 1.5`);
    }
  }
}

function checkType(registry, typeName, where, problems) {
  const registration = registry.findByName(typeName);
  if (registration && registration.schemaVersion.compareTo(TARGET) > 0) {
    problems.push(`${where}: ${typeName} needs a version newer than 1.5`);
  }
}

// The renderer checks "lang" with a regular expression that has the global flag
// (/^[a-z]{2,3}$/gi), so each exec starts where the previous match ended: every second card with
// a valid "lang" would be reported 'Invalid value "en"' (microsoft/AdaptiveCards#9145, open).
// Starting each card afresh keeps the check itself: an invalid "lang" is still reported.
const LANG = AC.CardElement.langProperty.regEx;

function validate(json) {
  const problems = [];
  LANG.lastIndex = 0;
  const card = new AC.AdaptiveCard();
  const context = new AC.SerializationContext(TARGET);
  context.onParseElement = (element, source) => {
    const where = `${source.type}${source.id ? "#" + source.id : ""}`;
    checkType(AC.GlobalRegistry.elements, source.type, where, problems);
    checkKeys(element, source, where, problems, new Set(["type", ...(CHILDREN[source.type] || [])]));
  };
  context.onParseAction = (action, source) => {
    const where = `${source.type}${source.title ? " '" + source.title + "'" : ""}`;
    checkType(AC.GlobalRegistry.actions, source.type, where, problems);
    checkKeys(action, source, where, problems, new Set(["type", ...(CHILDREN[source.type] || [])]));
  };
  card.parse(json, context);
  checkKeys(card, json, "AdaptiveCard", problems, ROOT_EXTRA);
  for (let i = 0; i < context.eventCount; i++) {
    const event = context.getEventAt(i);
    problems.push(`parse: ${AC.ValidationEvent[event.event]}: ${event.message}`);
  }
  for (const event of card.validateProperties().validationEvents) {
    problems.push(`validate: ${AC.ValidationEvent[event.event]}: ${event.message}`);
  }
  const rendered = card.render();
  if (!rendered) problems.push("render: the renderer produced no element");
  return problems;
}

function main() {
  const chunks = [];
  process.stdin.on("data", (chunk) => chunks.push(chunk));
  process.stdin.on("end", () => {
    const cards = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const report = {};
    for (const [name, json] of Object.entries(cards)) {
      try {
        report[name] = validate(json);
      } catch (error) {
        report[name] = [`exception: ${error && error.message}`];
      }
    }
    process.stdout.write(JSON.stringify(report));
  });
}

main();
