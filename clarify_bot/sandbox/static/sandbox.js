// The sandbox page: each person's DM with the bot in the local Slack, their App Home and open
// modals, the core's record beside them, and the clock. Every action goes to the page's own
// API, which has the local Slack send the bot the request Slack would send.
"use strict";

(() => {
  const { el } = BlockKit;
  const view = { people: [], selected: null, tab: "messages", now: null, shown: {},
    record: [], busy: false, openEvents: new Set() };

  function $(id) { return document.getElementById(id); }

  function status(text, bad) {
    const node = $("status");
    node.textContent = text;
    node.classList.toggle("bad", !!bad);
  }

  async function api(path, body) {
    const init = body === undefined ? {} : { method: "POST", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json" } };
    const response = await fetch(path, init);
    let json = null;
    try { json = await response.json(); } catch (_) { json = null; }
    if (!response.ok) throw new Error((json && json.error) || ("HTTP " + response.status));
    return json;
  }

  function person() {
    return view.people.find((p) => p.slackId === view.selected) || null;
  }

  function nameOf(personId) {
    const p = view.people.find((x) => x.id === personId);
    return p ? p.name : personId;
  }

  function localTime(iso, withDay) {
    const d = iso.slice(0, 10), t = iso.slice(11, 16);
    return withDay ? d + " " + t : t;
  }

  // ------------------------------------------------------------ people

  function drawPeople() {
    const list = $("people");
    list.textContent = "";
    for (const p of view.people) {
      const li = el("li");
      const b = el("button", "person" + (p.slackId === view.selected ? " selected" : ""));
      b.type = "button";
      b.dataset.person = p.slackId;
      b.setAttribute("aria-pressed", p.slackId === view.selected ? "true" : "false");
      const top = el("span", "person-name", p.name);
      const count = (p.sees.messages || []).filter((m) => !m.thread_ts || m.thread_ts === m.ts)
        .length;
      if (count) top.appendChild(el("span", "badge", String(count)));
      b.appendChild(top);
      const roles = p.roles.map((r) => r.role + " · " + r.workspace).join(", ");
      b.appendChild(el("span", "person-meta", roles || "no workspace role"));
      b.appendChild(el("span", "person-meta", localTime(p.localTime, false) + " " + p.zone +
        " · " + p.locale + (p.inHours ? "" : " · quiet hours")));
      b.addEventListener("click", () => select(p.slackId));
      li.appendChild(b);
      list.appendChild(li);
    }
  }

  function drawUnreachable(people) {
    const list = $("unreachable");
    const key = JSON.stringify(people);
    if (view.shown.unreachable === key) return;
    view.shown.unreachable = key;
    list.textContent = "";
    for (const p of people) {
      const li = el("li", "", p.name);
      li.appendChild(el("span", "person-meta", p.why));
      list.appendChild(li);
    }
  }

  function select(slackId) {
    view.selected = slackId;
    view.shown = { record: view.shown.record, unreachable: view.shown.unreachable };
    drawPeople();
    drawPerson(true);
    if (view.tab === "home") openHome();
  }

  // ------------------------------------------------------------ messages

  function ctxFor(p, message) {
    return { act: (element, where, extra) => click(p, message, element, where, extra) };
  }

  async function click(p, message, element, where, extra) {
    const body = { user: p.slackId, channel: message.channel, ts: message.ts,
      actionId: element.action_id, blockId: where.block_id || null,
      value: element.value === undefined ? null : element.value };
    if (extra && extra.selected_date) body.selectedDate = extra.selected_date;
    if (element.confirm && !(await confirmed(element.confirm))) return;
    await act("/api/click", body);
  }

  async function act(path, body) {
    if (view.busy) return;
    view.busy = true;
    status("Sent to the bot as Slack would send it…");
    try {
      const answer = await api(path, body);
      if (answer && answer.status >= 400) {
        status("The bot answered HTTP " + answer.status + "; Slack would show the person an " +
          "error.", true);
      } else if (answer && answer.status === 0) {
        status("Closed; Slack tells the bot nothing about this one.");
      } else {
        status("The bot acknowledged (HTTP " + answer.status + ").");
      }
      await refresh();
    } catch (err) {
      status(String(err.message || err), true);
    } finally {
      view.busy = false;
    }
  }

  function confirmed(confirm) {
    return new Promise((resolve) => {
      const dialog = el("dialog", "confirm");
      dialog.appendChild(el("h3", "", confirm.title ? confirm.title.text : "Are you sure?"));
      dialog.appendChild(BlockKit.textObject(confirm.text, "confirm-text"));
      const row = el("div", "modal-buttons");
      const deny = el("button", "", confirm.deny ? confirm.deny.text : "Cancel");
      const ok = el("button", "primary", confirm.confirm ? confirm.confirm.text : "Yes");
      deny.type = ok.type = "button";
      deny.addEventListener("click", () => { dialog.close(); resolve(false); });
      ok.addEventListener("click", () => { dialog.close(); resolve(true); });
      row.append(deny, ok);
      dialog.appendChild(row);
      dialog.addEventListener("close", () => { dialog.remove(); resolve(false); });
      document.body.appendChild(dialog);
      dialog.showModal();
      ok.focus();
    });
  }

  function messageNode(p, m) {
    const node = el("article", "message" + (m.ephemeral ? " ephemeral" : ""));
    node.dataset.ts = m.ts;
    if (m.metadata && m.metadata.event_payload && m.metadata.event_payload.delivery) {
      node.dataset.clarification = String(m.metadata.event_payload.delivery).split("|")[0];
    }
    const head = el("div", "message-head");
    head.appendChild(el("strong", "", "clarify-bot"));
    head.appendChild(el("span", "app-tag", "APP"));
    if (m.edits) head.appendChild(el("span", "muted", "(edited)"));
    if (m.ephemeral) head.appendChild(el("span", "muted", "Only visible to you"));
    node.appendChild(head);
    if (m.blocks && m.blocks.length) {
      node.appendChild(BlockKit.render(m.blocks, ctxFor(p, m)));
    } else {
      node.appendChild(BlockKit.mrkdwn(m.text || "", el("div", "bk-block")));
    }
    return node;
  }

  function drawMessages(p) {
    const box = $("messages");
    const messages = p.sees.messages || [];
    const key = JSON.stringify(messages);
    if (view.shown.messages === key) return;
    // as Slack opens a conversation: at its newest message; later, only if already there
    const atBottom = view.shown.messages === undefined ||
      box.scrollTop + box.clientHeight >= box.scrollHeight - 40;
    view.shown.messages = key;
    box.textContent = "";
    if (!messages.length) {
      box.appendChild(el("p", "empty", p.name + " has no message from the bot yet."));
    }
    const replies = {};
    for (const m of messages) {
      if (m.thread_ts && m.thread_ts !== m.ts) (replies[m.thread_ts] ||= []).push(m);
    }
    for (const m of messages) {
      if (m.thread_ts && m.thread_ts !== m.ts) continue;
      const node = messageNode(p, m);
      const thread = replies[m.ts];
      if (thread) {
        const t = el("div", "thread");
        t.appendChild(el("div", "muted", thread.length + (thread.length === 1 ? " reply"
          : " replies")));
        for (const r of thread) t.appendChild(messageNode(p, r));
        node.appendChild(t);
      }
      box.appendChild(node);
    }
    if (atBottom) box.scrollTop = box.scrollHeight;
  }

  // ------------------------------------------------------------ home and modals

  async function openHome() {
    const p = person();
    if (!p) return;
    try {
      await api("/api/home", { user: p.slackId });
      await refresh();
    } catch (err) {
      status(String(err.message || err), true);
    }
  }

  function drawHome(p) {
    const box = $("home");
    const home = p.sees.home;
    const key = JSON.stringify(home);
    if (view.shown.home === key) return;
    view.shown.home = key;
    box.textContent = "";
    if (!home) {
      box.appendChild(el("p", "empty", "The bot has not published a Home for " + p.name +
        " yet."));
      return;
    }
    const ctx = { act: (element, where) => act("/api/home", { user: p.slackId,
      actionId: element.action_id, blockId: where.block_id || null,
      value: element.value === undefined ? null : element.value }) };
    box.appendChild(BlockKit.render(home.blocks, ctx));
  }

  function drawModal(p) {
    const modals = (p && p.sees.modals) || [];
    const top = modals[modals.length - 1];
    const backdrop = $("modal");
    if (!top) {
      backdrop.hidden = true;
      view.shown.modal = null;
      return;
    }
    const key = top.id + "/" + top.hash + "/" + JSON.stringify(top.errors || {});
    if (view.shown.modal === key) return;
    const first = !view.shown.modal || !view.shown.modal.startsWith(top.id + "/");
    view.shown.modal = key;
    const v = top.view;
    $("modal-title").textContent = v.title ? v.title.text : "";
    $("modal-submit").textContent = v.submit ? v.submit.text : "Submit";
    $("modal-submit").hidden = !v.submit;
    $("modal-close").textContent = v.close ? v.close.text : "Cancel";
    const errors = top.errors || {};
    if (first || !$("modal-body").firstChild) {
      const body = $("modal-body");
      body.textContent = "";
      body.appendChild(BlockKit.render(v.blocks, { errors, act: () => {} }));
    } else {
      for (const node of $("modal-body").querySelectorAll(".bk-error")) node.remove();
      for (const [block, text] of Object.entries(errors)) {
        const node = $("modal-body").querySelector('[data-block-id="' + CSS.escape(block) +
          '"]');
        if (node) node.appendChild(el("div", "bk-error", text));
      }
    }
    $("modal-errors").textContent = Object.keys(errors).length ?
      "Slack keeps the form open: the bot named what to fix." : "";
    backdrop.hidden = false;
    backdrop.dataset.viewId = top.id;
    if (first) {
      const focusable = backdrop.querySelector("input,select,textarea,button");
      if (focusable) focusable.focus();
    }
  }

  function modalTop() {
    const p = person();
    const modals = (p && p.sees.modals) || [];
    return [p, modals[modals.length - 1]];
  }

  $("modal-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const [p, top] = modalTop();
    if (!top) return;
    act("/api/submit", { user: p.slackId, viewId: top.id,
      values: BlockKit.values($("modal-body"), top.view.blocks) });
  });
  $("modal-close").addEventListener("click", () => {
    const [p, top] = modalTop();
    if (top) act("/api/close", { user: p.slackId, viewId: top.id });
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("modal").hidden) $("modal-close").click();
  });

  // ------------------------------------------------------------ the whole person

  function drawPerson(force) {
    const p = person();
    if (!p) return;
    if (force) {
      view.shown = { record: view.shown.record, unreachable: view.shown.unreachable };
    }
    $("dm-title").textContent = p.name + " · " + p.slackId;
    $("morning").textContent = "Next working morning (" + p.name.split(" ")[0] + "'s)";
    $("messages").hidden = view.tab !== "messages";
    $("home").hidden = view.tab !== "home";
    $("tab-messages").setAttribute("aria-selected", String(view.tab === "messages"));
    $("tab-home").setAttribute("aria-selected", String(view.tab === "home"));
    if (view.tab === "messages") drawMessages(p);
    else drawHome(p);
    drawModal(p);
  }

  $("tab-messages").addEventListener("click", () => { view.tab = "messages"; drawPerson(true); });
  $("tab-home").addEventListener("click", () => {
    view.tab = "home";
    drawPerson(true);
    openHome();
  });

  // ------------------------------------------------------------ the core's record

  function drawRecord() {
    const box = $("record");
    const key = JSON.stringify([view.record, view.people.map((p) => p.id)]);
    if (view.shown.record === key) return;
    view.shown.record = key;
    box.textContent = "";
    for (const c of view.record) {
      const card = el("article", "clarification state-" + c.state);
      card.dataset.clarification = c.id;
      const head = el("div", "c-head");
      head.appendChild(el("span", "pill sev-" + c.severity, c.severity));
      head.appendChild(el("span", "pill state", c.state));
      head.appendChild(el("code", "muted", c.id));
      card.appendChild(head);
      card.appendChild(el("h3", "", c.question || "(redacted)"));
      card.appendChild(el("p", "muted", c.title));
      const q = c.quorum;
      card.appendChild(el("p", "quorum", "Quorum: " + q.confirmations + " of " + q.required +
        " (" + q.state + ")" + (q.confirmedBy.length ? " · confirmed by " +
        q.confirmedBy.map(nameOf).join(", ") : "")));
      if (c.held) {
        card.appendChild(el("p", "held", "Held by the bot for " + nameOf(c.held.person) +
          " until " + localTime(c.held.until, true) + " UTC: " + c.held.why));
      }
      if (c.asked.length) {
        card.appendChild(el("p", "", "Asked: " + c.asked.map(nameOf).join(", ")));
      }
      if (c.responses.length) {
        const list = el("ul", "responses");
        for (const r of c.responses) {
          list.appendChild(el("li", "", nameOf(r.responder) + " (" + r.role + "): " + r.answer +
            " · " + r.binding + " · " + r.channel));
        }
        card.appendChild(list);
      }
      const bound = c.versions.filter((v) => v.clarification === c.id);
      for (const v of bound) {
        card.appendChild(el("p", "bound", "Fact version " + localTime(v.versionTx, true) +
          ": " + (v.from || "…") + (v.to ? " – " + v.to : "") + " · " + v.evidence +
          (v.current ? " (current)" : "")));
      }
      if (c.events.length) {
        const details = el("details", "events");
        details.open = view.openEvents.has(c.id);  // kept open across the record's redraws
        details.addEventListener("toggle", () => {
          if (details.open) view.openEvents.add(c.id);
          else view.openEvents.delete(c.id);
        });
        details.appendChild(el("summary", "", c.events.length + " events"));
        const list = el("ol");
        for (const e of c.events) {
          list.appendChild(el("li", "", localTime(e.at, true) + " " + e.type +
            (e.person ? " · " + nameOf(e.person) : "") + (e.reason ? " · " + e.reason : "")));
        }
        details.appendChild(list);
        card.appendChild(details);
      }
      box.appendChild(card);
    }
  }

  // ------------------------------------------------------------ clock and questions

  for (const b of document.querySelectorAll("[data-step]")) {
    b.addEventListener("click", async () => {
      try {
        const moved = await api("/api/clock", { step: b.dataset.step, user: view.selected });
        status("The clock moved to " + localTime(moved.now, true) + " UTC; the bot sees it " +
          "within a second.");
        await refresh();
      } catch (err) {
        status(String(err.message || err), true);
      }
    });
  }

  $("rate-limit").addEventListener("click", async () => {
    try {
      const made = await api("/api/slack", { retryAfter: 5 });
      status("The local Slack answers the bot's next " + made.method + " with 429 (Retry-After " +
        made.retryAfter + " s); create a question to watch the bot wait it out.");
    } catch (err) {
      status(String(err.message || err), true);
    }
  });

  function drawForm(workspaces) {
    const select = $("q-workspace");
    if (!select.options.length) {
      for (const [id, name] of Object.entries(workspaces)) {
        const o = el("option", "", name + " (" + id + ")");
        o.value = id;
        select.appendChild(o);
      }
    }
    const authors = $("q-authors");
    if (!authors.firstChild) {
      view.people.forEach((p, n) => {
        const label = el("label", "inline");
        const box = el("input");
        box.type = "checkbox";
        box.name = "authors";
        box.value = p.id;
        box.checked = n === 0;
        label.append(box, document.createTextNode(" " + p.name));
        authors.appendChild(label);
      });
    }
  }

  $("question-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = new FormData(event.target);
    const body = { workspace: f.get("workspace"), severity: f.get("severity"),
      question: f.get("question"), title: f.get("title"),
      restricted: f.get("restricted") === "on",
      authors: f.getAll("authors"),
      candidates: [0, 1].filter((n) => f.get("date" + n)).map((n) => ({
        label: f.get("label" + n), date: f.get("date" + n) })) };
    try {
      const made = await api("/api/questions", body);
      status("The core created " + made.id + "; the bot asks within a few seconds.");
      await refresh();
    } catch (err) {
      status(String(err.message || err), true);
    }
  });

  // ------------------------------------------------------------ polling

  async function refresh() {
    const [state, record] = await Promise.all([api("/api/state"), api("/api/record")]);
    view.people = state.people;
    view.record = record.clarifications;
    $("now").textContent = localTime(state.now, true) + " UTC";
    $("now").dateTime = state.now;
    $("window").textContent = "Past the escalation window (" + state.windowHours + " h)";
    if (!view.selected && view.people.length) view.selected = view.people[0].slackId;
    drawForm(state.workspaces);
    drawPeople();
    drawUnreachable(state.unreachable || []);
    drawPerson(false);
    drawRecord();
  }

  async function loop() {
    try {
      await refresh();
    } catch (err) {
      status("The sandbox does not answer (" + (err.message || err) + ")", true);
    }
    setTimeout(loop, 1000);
  }

  loop();
})();
