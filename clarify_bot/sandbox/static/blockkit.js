// Block Kit drawn as Slack draws it, from the JSON the bot sent: sections, headers, context,
// dividers, actions (buttons, date pickers, selects) and inputs, with mrkdwn formatting. Every
// string is put into the page as text (DOM text nodes), never as markup: what a message says
// cannot become HTML here, as it cannot in Slack.
"use strict";

const BlockKit = (() => {
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // Slack escapes &, < and > in message text; a reader sees the characters.
  function unescape(text) {
    return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  // <url|label>, <url>, <@U123>, <#C123|name>, <!here>, <!date^…|fallback>
  function special(token, out) {
    const inner = token.slice(1, -1);
    const bar = inner.indexOf("|");
    const target = bar >= 0 ? inner.slice(0, bar) : inner;
    const label = bar >= 0 ? inner.slice(bar + 1) : "";
    if (target.startsWith("@")) {
      out.appendChild(el("span", "mention", "@" + (label || target.slice(1))));
    } else if (target.startsWith("#")) {
      out.appendChild(el("span", "mention", "#" + (label || target.slice(1))));
    } else if (target.startsWith("!date")) {
      out.appendChild(el("span", "date", unescape(label || target)));
    } else if (target.startsWith("!")) {
      out.appendChild(el("span", "mention", "@" + target.slice(1)));
    } else if (/^(https?:|mailto:)/.test(target)) {
      const a = el("a", "link", unescape(label || target));
      a.href = unescape(target);
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      out.appendChild(a);
    } else {
      out.appendChild(document.createTextNode(unescape(token)));
    }
  }

  const INLINE = [
    ["`", "code"], ["*", "b"], ["_", "i"], ["~", "s"],
  ];

  // One line of mrkdwn: *bold*, _italic_, ~strike~, `code`, as Slack reads them (a marker
  // opens at a word's start and closes at a word's end).
  function inline(text, out) {
    let rest = text;
    while (rest.length) {
      let best = null;
      for (const [mark, tag] of INLINE) {
        const m = new RegExp("(^|[\\s(\\[{>\"'])" + escapeRe(mark) + "([^" + escapeRe(mark) +
          "\\n]*[^\\s" + escapeRe(mark) + "])" + escapeRe(mark) + "(?=$|[\\s.,;:!?)\\]}'\"<])")
          .exec(rest);
        if (m && (best === null || m.index + m[1].length < best.at)) {
          best = { at: m.index + m[1].length, end: m.index + m[0].length, tag, body: m[2] };
        }
      }
      if (best === null) {
        out.appendChild(document.createTextNode(unescape(rest)));
        return;
      }
      if (best.at > 0) out.appendChild(document.createTextNode(unescape(rest.slice(0, best.at))));
      const node = el(best.tag === "s" ? "del" : best.tag);
      if (best.tag === "code") node.textContent = unescape(best.body);
      else inline(best.body, node);
      out.appendChild(node);
      rest = rest.slice(best.end);
    }
  }

  function escapeRe(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function mrkdwn(text, out) {
    const lines = String(text).split("\n");
    lines.forEach((line, n) => {
      let target = out;
      if (line.startsWith("&gt; ") || line.startsWith("> ")) {
        target = el("span", "quote");
        out.appendChild(target);
        line = line.replace(/^(&gt;|>) /, "");
      }
      const parts = line.split(/(<[^<>\s][^<>]*>)/);
      for (const part of parts) {
        if (!part) continue;
        if (/^<[^<>]+>$/.test(part)) special(part, target);
        else inline(part, target);
      }
      if (n < lines.length - 1) out.appendChild(el("br"));
    });
    return out;
  }

  // A text object: plain_text is text as written; mrkdwn is formatted (``verbatim`` only stops
  // Slack from turning bare URLs and names into links, which this page never does anyway).
  function textObject(obj, cls) {
    const node = el("span", cls);
    if (!obj) return node;
    if (obj.type === "mrkdwn") mrkdwn(obj.text || "", node);
    else node.textContent = obj.text || "";
    return node;
  }

  function richItem(item) {
    let node;
    if (item.type === "link") {
      node = el("a", "link", item.text || item.url);
      node.href = item.url;
      node.target = "_blank";
      node.rel = "noopener noreferrer";
    } else if (item.type === "emoji") {
      node = el("span", "", item.unicode ? String.fromCodePoint(
        ...item.unicode.split("-").map((h) => parseInt(h, 16))) : ":" + item.name + ":");
    } else {
      node = el("span", "", item.text || "");
    }
    const style = item.style || {};
    if (style.code) node = wrap("code", node);
    if (style.bold) node = wrap("b", node);
    if (style.italic) node = wrap("i", node);
    if (style.strike) node = wrap("del", node);
    return node;
  }

  function wrap(tag, child) {
    const outer = el(tag);
    outer.appendChild(child);
    return outer;
  }

  function button(element, ctx, where) {
    const b = el("button", "bk-button" + (element.style ? " " + element.style : ""));
    b.type = "button";
    b.appendChild(textObject(element.text));
    b.dataset.actionId = element.action_id || "";
    if (element.value !== undefined) b.dataset.value = element.value;
    if (element.url) {
      b.addEventListener("click", () => window.open(element.url, "_blank", "noopener"));
      b.title = element.url;
      return b;
    }
    b.addEventListener("click", () => ctx.act(element, where));
    return b;
  }

  function datepicker(element, ctx, where, inInput) {
    const wrap = el("label", "bk-date");
    if (element.placeholder) wrap.appendChild(el("span", "bk-placeholder",
      element.placeholder.text));
    const input = el("input");
    input.type = "date";
    input.dataset.actionId = element.action_id || "";
    if (element.initial_date) input.value = element.initial_date;
    input.setAttribute("aria-label", (element.placeholder && element.placeholder.text) ||
      "date");
    if (!inInput) {
      input.addEventListener("change", () => ctx.act(element, where, { selected_date:
        input.value }));
    }
    wrap.appendChild(input);
    return wrap;
  }

  function select(element, ctx, where, inInput) {
    const s = el("select", "bk-select");
    s.dataset.actionId = element.action_id || "";
    const blank = el("option", "", (element.placeholder && element.placeholder.text) ||
      "Select an item");
    blank.value = "";
    s.appendChild(blank);
    for (const option of element.options || []) {
      const o = el("option", "", option.text && option.text.text);
      o.value = option.value;
      s.appendChild(o);
    }
    if (element.initial_option) s.value = element.initial_option.value;
    if (!inInput) {
      s.addEventListener("change", () => {
        const chosen = (element.options || []).find((o) => o.value === s.value);
        if (chosen) ctx.act(element, where, { selected_option: chosen });
      });
    }
    return s;
  }

  function textInput(element) {
    const input = el(element.multiline ? "textarea" : "input", "bk-text");
    input.dataset.actionId = element.action_id || "";
    if (element.initial_value) input.value = element.initial_value;
    if (element.max_length) input.maxLength = element.max_length;
    if (element.placeholder) input.placeholder = element.placeholder.text;
    return input;
  }

  function radios(element, where) {
    const group = el("div", "bk-radios");
    group.dataset.actionId = element.action_id || "";
    for (const option of element.options || []) {
      const label = el("label");
      const r = el("input");
      r.type = "radio";
      r.name = (where.block_id || "") + "/" + (element.action_id || "");
      r.value = option.value;
      if (element.initial_option && element.initial_option.value === option.value) {
        r.checked = true;
      }
      label.appendChild(r);
      label.appendChild(textObject(option.text));
      group.appendChild(label);
    }
    return group;
  }

  function element(e, ctx, where, inInput) {
    switch (e.type) {
      case "button": return button(e, ctx, where);
      case "datepicker": return datepicker(e, ctx, where, inInput);
      case "static_select": return select(e, ctx, where, inInput);
      case "plain_text_input": return textInput(e);
      case "radio_buttons": return radios(e, where);
      case "image": {
        const span = el("span", "bk-image", "[image: " + (e.alt_text || "") + "]");
        return span;
      }
      case "overflow": {
        const s = select({ ...e, placeholder: { text: "⋯" } }, ctx, where, inInput);
        return s;
      }
      default: return el("span", "bk-unknown", "[" + e.type + "]");
    }
  }

  function block(b, ctx) {
    const where = { block_id: b.block_id };
    const node = el("div", "bk-block bk-" + b.type);
    if (b.block_id) node.dataset.blockId = b.block_id;
    switch (b.type) {
      case "header":
        node.appendChild(textObject(b.text));
        break;
      case "section": {
        const body = el("div", "bk-section-body");
        if (b.text) body.appendChild(textObject(b.text, "bk-text-block"));
        if (b.fields) {
          const fields = el("div", "bk-fields");
          for (const f of b.fields) fields.appendChild(textObject(f, "bk-field"));
          body.appendChild(fields);
        }
        node.appendChild(body);
        if (b.accessory) node.appendChild(element(b.accessory, ctx, where, false));
        break;
      }
      case "context":
        for (const e of b.elements || []) {
          node.appendChild(e.type === "image" ? element(e, ctx, where, false)
            : textObject(e, "bk-context-item"));
        }
        break;
      case "divider":
        node.appendChild(el("hr"));
        break;
      case "actions":
        for (const e of b.elements || []) node.appendChild(element(e, ctx, where, false));
        break;
      case "input": {
        const label = el("label", "bk-label");
        label.appendChild(textObject(b.label));
        node.appendChild(label);
        const control = element(b.element || {}, ctx, where, true);
        control.classList.add("bk-control");
        // Slack's client refuses to submit a required input left empty, as the browser does here
        const field = control.matches("input,select,textarea") ? control
          : control.querySelector("input,select,textarea");
        if (field && !b.optional) field.required = true;
        if (field && b.element && b.element.min_length) field.minLength = b.element.min_length;
        node.appendChild(control);
        if (b.hint) node.appendChild(textObject(b.hint, "bk-hint"));
        if (ctx.errors && ctx.errors[b.block_id]) {
          node.appendChild(el("div", "bk-error", ctx.errors[b.block_id]));
        }
        break;
      }
      case "rich_text":
        for (const section of b.elements || []) {
          const p = el("div", "bk-rich");
          for (const item of section.elements || []) p.appendChild(richItem(item));
          node.appendChild(p);
        }
        break;
      default:
        node.appendChild(el("span", "bk-unknown", "[" + b.type + " block]"));
    }
    return node;
  }

  // The blocks as nodes; ctx.act(element, where, extra) is called when a person acts.
  function render(blocks, ctx) {
    const frag = el("div", "bk");
    for (const b of blocks || []) frag.appendChild(block(b, ctx));
    return frag;
  }

  // What a person entered in a modal's inputs, by block id: a date (YYYY-MM-DD), a text, or an
  // option's value; null where they left it empty. The local Slack turns it into the
  // view_submission's state.values, as Slack does.
  function values(root, blocks) {
    const out = {};
    for (const b of blocks || []) {
      if (b.type !== "input" || !b.element) continue;
      const node = root.querySelector('[data-block-id="' + CSS.escape(b.block_id) + '"]');
      if (!node) continue;
      let v = null;
      if (b.element.type === "radio_buttons") {
        const r = node.querySelector("input:checked");
        v = r ? r.value : null;
      } else {
        const control = node.querySelector("input,textarea,select");
        v = control && control.value !== "" ? control.value : null;
      }
      out[b.block_id] = v;
    }
    return out;
  }

  return { render, values, mrkdwn, textObject, el };
})();
