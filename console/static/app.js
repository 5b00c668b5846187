// The Agentik web console. Plain JavaScript on the public native API only:
// REST with a bearer token in the Authorization header, SSE (EventSource)
// with ?access_token=. Untrusted text is only ever set with textContent.
"use strict";
(function () {
  const TOKEN_KEY = "agentik.token";
  const AGENT_KEY = "agentik.agent";
  const DEMO_MODEL = "agentik-demo";
  const $ = (id) => document.getElementById(id);
  const md = window.AgentikMarkdown;

  const state = {
    token: "",
    base: "/agentik", // the selected agent's native API
    info: null,
    convs: new Map(), // id → ConversationInfo
    gone: new Set(), // ids deleted while a list page was being read (ids are never reused)
    next: "",
    current: "",
    es: null, // the conversation's EventSource
    agentES: null,
    lastCursor: 0,
    retry: null,
    busy: false,
    live: null, // the answer being streamed
    cards: new Map(), // call_id → tool card
    turns: new Map(), // user message id → turn
    attachments: [],
    creating: false, // a first message is making its conversation
    approvals: true, // false once the server says it has no approval API
  };

  // ---- helpers ----------------------------------------------------------
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function setStatus(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.classList.toggle("error", !!isError);
  }
  function when(t) {
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleString();
  }
  class APIError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }
  async function request(method, url, body) {
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) {
      const err = (data && data.error) || {};
      throw new APIError(res.status, err.code || "", err.message || res.statusText || "request failed");
    }
    return data;
  }
  const api = (method, path, body) => request(method, state.base + path, body);
  function streamURL(path, after) {
    const q = new URLSearchParams();
    if (after !== undefined) q.set("after", String(after));
    if (state.token) q.set("access_token", state.token);
    const s = q.toString();
    return state.base + path + (s ? "?" + s : "");
  }
  const enc = encodeURIComponent;

  // ---- sign-in and agents -----------------------------------------------
  async function boot() {
    state.token = localStorage.getItem(TOKEN_KEY) || "";
    setStatus("Connecting…");
    try {
      await loadAgents();
      state.info = await api("GET", "");
    } catch (e) {
      if (e.status === 401) {
        showSignIn(state.token ? "That token was not accepted." : "");
        return;
      }
      setStatus("Cannot reach the agent: " + e.message, true);
      return;
    }
    setStatus("");
    showApp();
  }

  // loadAgents fills the picker from GET /agents; a server without it (404)
  // has one agent at /agentik.
  async function loadAgents() {
    let list;
    try {
      list = await request("GET", "/agents");
    } catch (e) {
      if (e.status === 404 || e.status === 405) { $("agent-picker").hidden = true; return; }
      throw e;
    }
    const agents = (list && list.agents) || [];
    const sel = $("agent-select");
    sel.replaceChildren();
    const wanted = localStorage.getItem(AGENT_KEY);
    let chosen = agents.find((a) => a.id === wanted) || agents.find((a) => a.default) || agents[0];
    for (const a of agents) {
      const o = el("option", "", a.name ? a.name + " (" + a.id + ")" : a.id);
      o.value = a.id;
      if (a === chosen) o.selected = true;
      sel.appendChild(o);
    }
    $("agent-picker").hidden = agents.length < 2;
    state.agents = agents;
    if (chosen) state.base = agentBase(chosen);
  }
  function agentBase(a) {
    const p = (a.endpoints && a.endpoints.agentik) || "/agents/" + enc(a.id);
    try { return new URL(p, location.href).pathname.replace(/\/$/, ""); } catch (_) { return p; }
  }

  function showSignIn(msg) {
    closeStreams();
    $("app").hidden = true;
    $("sign-out").hidden = true;
    $("demo-banner").hidden = true;
    $("signin").hidden = false;
    $("signin-error").textContent = msg || "";
    setStatus("");
    $("token").focus();
  }

  function showApp() {
    $("signin").hidden = true;
    $("app").hidden = false;
    $("sign-out").hidden = !state.token;
    const info = state.info || {};
    $("agent-name").textContent = (info.name || "Agent") + (info.model ? " · " + info.model : "");
    $("demo-banner").hidden = info.model !== DEMO_MODEL;
    const images = !!(info.capabilities && info.capabilities.image_input);
    $("image-pick").hidden = !images;
    state.imageInput = images;
    state.convs.clear();
    state.gone.clear();
    $("conv-list").replaceChildren();
    openAgentEvents(); // lists the conversations once the stream is open
    loadTools();
    route();
    if (!state.current) $("composer-text").focus(); // type at once: the first message makes the conversation
  }

  // ---- conversation list --------------------------------------------------
  async function loadConversations(before) {
    const q = "?limit=30" + (before ? "&before=" + enc(before) : "");
    try {
      const known = before ? null : new Set(state.convs.keys());
      const page = await api("GET", "/conversations" + q);
      if (known) { // the first page again: what it should hold but does not was deleted meanwhile
        const got = new Set((page.conversations || []).map((c) => c.id));
        const list = page.conversations || [];
        const oldest = page.next && list.length ? list[list.length - 1].updated_at : "";
        for (const id of known) {
          const c = state.convs.get(id);
          if (c && !got.has(id) && (!oldest || c.updated_at >= oldest)) state.convs.delete(id);
        }
      }
      for (const c of page.conversations || []) {
        if (!state.gone.has(c.id)) state.convs.set(c.id, Object.assign(state.convs.get(c.id) || {}, c));
      }
      state.next = page.next || "";
      $("more-convs").hidden = !state.next;
      renderList();
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus("Cannot list conversations: " + e.message, true);
    }
  }
  function renderList() {
    const ul = $("conv-list");
    const items = [...state.convs.values()].sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0));
    ul.replaceChildren();
    for (const c of items) {
      const li = el("li");
      const b = el("button", "conv-item");
      b.type = "button";
      b.dataset.id = c.id;
      b.appendChild(el("span", "conv-name", c.title || "Untitled conversation"));
      b.appendChild(el("span", "conv-when", when(c.updated_at)));
      if (c.id === state.current) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => go(c.id));
      li.appendChild(b);
      ul.appendChild(li);
    }
    if (!items.length) ul.appendChild(el("li", "muted", "No conversations yet."));
  }

  function openAgentEvents() {
    if (state.agentES) state.agentES.close();
    const es = new EventSource(streamURL("/events"));
    state.agentES = es;
    const on = (t, f) => es.addEventListener(t, (m) => { try { f(JSON.parse(m.data)); } catch (_) { /* ignore a bad event */ } });
    // A stream opened without a cursor delivers what happens from now on:
    // the list is read each time it (re)opens, so nothing between the read
    // and the subscription is missed. A stream that cannot open still lists.
    es.addEventListener("open", () => loadConversations(""));
    es.addEventListener("error", () => { if (es.readyState === EventSource.CLOSED && state.agentES === es) loadConversations(""); });
    on("created", (ev) => { if (ev.conversation) state.convs.set(ev.conversation.id, ev.conversation); renderList(); });
    on("deleted", (ev) => {
      state.gone.add(ev.conversation_id);
      state.convs.delete(ev.conversation_id);
      renderList();
      if (ev.conversation_id === state.current) { closeConversation(); setStatus("This conversation was deleted."); }
    });
    on("renamed", (ev) => {
      const c = state.convs.get(ev.conversation_id);
      if (c) { c.title = ev.title; if (ev.updated_at) c.updated_at = ev.updated_at; }
      if (ev.conversation_id === state.current) $("conv-title").textContent = ev.title || "Untitled conversation";
      renderList();
    });
    on("touched", (ev) => {
      const c = state.convs.get(ev.conversation_id);
      if (c && ev.updated_at) { c.updated_at = ev.updated_at; renderList(); } else if (!c) loadConversations("");
    });
  }
  function closeStreams() {
    if (state.agentES) { state.agentES.close(); state.agentES = null; }
    closeConversation();
  }

  // ---- routing: #/c/<id> ------------------------------------------------------
  function go(id) {
    if (location.hash !== "#/c/" + id) location.hash = "#/c/" + id;
    else route();
  }
  function route() {
    const m = /^#\/c\/([^/]+)$/.exec(location.hash);
    if (m) openConversation(decodeURIComponent(m[1]));
    else closeConversation();
  }
  window.addEventListener("hashchange", () => { if (!$("app").hidden) route(); });

  // ---- one conversation -----------------------------------------------------
  // With no conversation open the view is a new one, not made yet: the
  // message box is there, and the first message sent makes it (send).
  function closeConversation() {
    if (state.es) { state.es.close(); state.es = null; }
    clearTimeout(state.retry);
    if (state.current) { state.attachments = []; renderAttachments(); } // a draft stays with a new conversation
    state.current = "";
    state.lastCursor = 0;
    if (state.live && state.live.frame) cancelAnimationFrame(state.live.frame);
    state.live = null;
    state.cards.clear();
    state.turns.clear();
    setBusy(false);
    $("messages").replaceChildren();
    $("events").replaceChildren();
    $("turns").tBodies[0].replaceChildren();
    $("approval-list").replaceChildren();
    $("approvals").hidden = true;
    $("rename-form").hidden = true;
    $("conv-title").hidden = false;
    $("conv-title").textContent = "New conversation";
    $("conv-actions").hidden = true;
    $("messages").hidden = true;
    $("empty").hidden = false;
    document.querySelectorAll(".conv-item[aria-current]").forEach((b) => b.removeAttribute("aria-current"));
  }

  async function openConversation(id) {
    if (state.current === id && state.es) return;
    closeConversation();
    state.current = id;
    const known = state.convs.get(id);
    $("conv-title").textContent = (known && known.title) || "Untitled conversation";
    $("conv-actions").hidden = false;
    $("empty").hidden = true;
    $("messages").hidden = false;
    renderList();
    try {
      const c = await api("GET", "/conversations/" + enc(id));
      if (state.current !== id) return;
      state.convs.set(id, c);
      $("conv-title").textContent = c.title || "Untitled conversation";
      renderList();
    } catch (e) {
      if (state.current !== id) return;
      closeConversation();
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus(e.status === 404 ? "That conversation does not exist (or is not yours)." : "Cannot open the conversation: " + e.message, true);
      return;
    }
    connect(id, 0);
    loadApprovals();
    $("composer-text").focus();
  }

  const TYPES = ["user_message", "assistant_message", "tool_call", "tool_result", "tool_failed", "error", "interrupted",
    "conversation_closing", "compaction_triggered", "approval_requested", "approval_resolved",
    "working", "start_reasoning", "start_response", "append_text", "append_image", "end"];

  // connect subscribes from cursor after. EventSource itself reconnects
  // after a drop with Last-Event-ID (the last durable cursor), and the
  // server answers with exactly the missed events, then, if a turn is still
  // running, "working" and the partial text so far.
  function connect(id, after) {
    const es = new EventSource(streamURL("/conversations/" + enc(id) + "/events", after));
    state.es = es;
    for (const t of TYPES) {
      es.addEventListener(t, (m) => {
        if (state.es !== es) return;
        let ev;
        try { ev = JSON.parse(m.data); } catch (_) { return; }
        handle(ev);
      });
    }
    es.onopen = () => { if (state.es === es) setStatus(""); };
    es.onerror = () => {
      if (state.es !== es) return;
      console.warn("conversation stream error, state " + es.readyState + " at cursor " + state.lastCursor);
      if (es.readyState === EventSource.CLOSED) {
        // Refused (the server answered with an error): find out why, then
        // resume by cursor.
        es.close();
        state.es = null;
        setStatus("Connection lost; reconnecting…", true);
        state.retry = setTimeout(async () => {
          try { await api("GET", "/conversations/" + enc(id)); } catch (e) {
            if (e.status === 404) { closeConversation(); setStatus("This conversation no longer exists.", true); return; }
            if (e.status === 401) { showSignIn("Your token is no longer accepted."); return; }
          }
          if (state.current === id && !state.es) connect(id, state.lastCursor);
        }, 1000);
      } else {
        setStatus("Connection lost; reconnecting…", true);
      }
    };
  }

  function handle(ev) {
    if (ev.cursor) {
      if (ev.cursor <= state.lastCursor) return; // already shown
      state.lastCursor = ev.cursor;
      inspect(ev);
    }
    switch (ev.type) {
      case "working": setBusy(true); resetLive(); break;
      case "start_reasoning": live().mode = "reasoning"; break;
      case "start_response": live().mode = "text"; break;
      case "append_text": appendLive(ev.text || ""); break;
      case "append_image": { const l = live(); l.images.appendChild(image(ev.mime, ev.data, "Image from the agent")); break; }
      case "end":
        setBusy(false);
        if (state.live && !state.live.text && !state.live.reasoning && !state.live.images.childNodes.length) dropLive();
        else if (state.live) finishLive();
        noteTurn(ev.reply_to, { tokens: ev.tokens, endReason: ev.reason, ended: ev.date });
        break;
      case "user_message": userMessage(ev.message); break;
      case "assistant_message": assistantMessage(ev.message); break;
      case "tool_call": toolCall(ev.message); break;
      case "tool_result":
      case "tool_failed": toolResult(ev.message, ev.type === "tool_failed"); break;
      case "error": errorMessage(ev.message); break;
      case "interrupted":
        marker("Interrupted" + (ev.reason ? " (" + reasonText(ev.reason) + ")" : ""), "interrupted");
        noteTurn(ev.reply_to, { outcome: "interrupted", ended: ev.date });
        break;
      case "conversation_closing": marker("The conversation is closing.", "closing"); break;
      case "compaction_triggered": compaction(ev); break;
      case "approval_requested":
      case "approval_resolved": loadApprovals(); break;
    }
  }
  function reasonText(r) {
    return { user: "by you", busy_policy: "by a newer message", restart: "server restart", shutdown: "server shutdown" }[r] || r;
  }

  // ---- rendering the chat -------------------------------------------------------
  function add(node) {
    const list = $("messages");
    if (state.live && state.live.li.parentNode === list) list.insertBefore(node, state.live.li);
    else list.appendChild(node);
    scrollDown();
  }
  function scrollDown() {
    const list = $("messages");
    list.scrollTop = list.scrollHeight;
  }
  function image(mime, data, alt) {
    const img = el("img", "inline-image");
    img.alt = alt;
    if (/^image\/(png|jpeg|gif|webp)$/.test(mime || "") && /^[A-Za-z0-9+/=]*$/.test(data || "")) img.src = "data:" + mime + ";base64," + data;
    return img;
  }
  function contentParts(parent, content, markdown, who) {
    let n = 0;
    for (const c of content || []) {
      if (c.type === "text") {
        if (markdown) parent.appendChild(md.render(c.text));
        else parent.appendChild(el("p", "plain", c.text));
      } else if (c.type === "image") {
        parent.appendChild(image(c.mime, c.data, who + " image " + ++n));
      }
    }
  }
  function bubble(role, label) {
    const li = el("li", "msg " + role);
    li.appendChild(el("span", "who", label));
    const body = el("div", "body");
    li.appendChild(body);
    return { li, body };
  }
  function userMessage(m) {
    const { li, body } = bubble("user", "You");
    li.dataset.seq = m.seq;
    contentParts(body, m.content, false, "Your");
    add(li);
    const text = (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
    noteTurn(m.id, { seq: m.seq, text: text || "(image)", started: m.date });
  }
  function reasoningBlock(text) {
    const d = el("details", "reasoning");
    d.appendChild(el("summary", "", "Reasoning"));
    d.appendChild(el("p", "plain", text));
    return d;
  }
  function assistantMessage(m) {
    const { li, body } = bubble("assistant", "Agent");
    li.dataset.seq = m.seq;
    if (m.reasoning) body.appendChild(reasoningBlock(m.reasoning));
    contentParts(body, m.content, true, "Agent");
    if (m.interrupted) body.appendChild(el("p", "note", "(answer cut short)"));
    if (state.live) { state.live.li.replaceWith(li); state.live = null; scrollDown(); } else add(li);
    noteTurn(m.reply_to, m.interrupted ? { outcome: "interrupted", ended: m.date, tokens: m.tokens } : { outcome: "completed", ended: m.date, tokens: m.tokens });
  }
  function toolCall(m) {
    const li = el("li", "tool");
    const d = el("details");
    d.open = true;
    const s = el("summary");
    s.appendChild(el("span", "tool-label", "Tool call "));
    s.appendChild(el("code", "tool-name", m.name));
    const st = el("span", "tool-state", "running…");
    s.appendChild(st);
    d.appendChild(s);
    d.appendChild(el("h4", "", "Arguments"));
    d.appendChild(el("pre", "json", pretty(m.arguments)));
    const res = el("div", "tool-result");
    d.appendChild(res);
    li.appendChild(d);
    state.cards.set(m.call_id, { li, st, res });
    add(li);
  }
  function toolResult(m, failed) {
    let card = state.cards.get(m.call_id);
    if (!card) { toolCall({ name: m.name, call_id: m.call_id, arguments: "" }); card = state.cards.get(m.call_id); }
    card.st.textContent = failed ? "failed" : "done";
    card.li.classList.toggle("failed", failed);
    card.res.replaceChildren(el("h4", "", failed ? "Error" : "Result"));
    const text = (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    card.res.appendChild(el("pre", "json", pretty(text)));
    contentParts(card.res, (m.content || []).filter((c) => c.type === "image"), false, "Tool");
  }
  function errorMessage(m) {
    const li = el("li", "msg error-msg");
    li.setAttribute("role", "alert");
    li.appendChild(el("span", "who", "Error" + (m.code ? " · " + m.code : "")));
    const text = (m.content || []).map((c) => c.text || "").join(" ");
    li.appendChild(el("p", "plain", m.details || text || "The turn failed."));
    if (state.live) dropLive();
    add(li);
    noteTurn(m.reply_to, { outcome: "error", ended: m.date });
  }
  function marker(text, cls) {
    const li = el("li", "marker " + (cls || ""), text);
    add(li);
    return li;
  }
  function compaction(ev) {
    const c = ev.compaction || {};
    let text = "Context compacted: " + (ev.dropped || 0) + " earlier messages " + (c.fallback ? "dropped (no summary)" : "summarised");
    if (c.tokens_before) text += " · " + c.tokens_before + " → " + (c.tokens_after || "?") + " tokens";
    const li = marker(text, "compaction");
    if (c.summary) {
      const d = el("details");
      d.appendChild(el("summary", "", "Summary"));
      d.appendChild(el("p", "plain", c.summary));
      li.appendChild(d);
    }
  }
  function pretty(v) {
    if (v === undefined || v === null || v === "") return "";
    if (typeof v === "string") {
      try { return JSON.stringify(JSON.parse(v), null, 2); } catch (_) { return v; }
    }
    return JSON.stringify(v, null, 2);
  }

  // The live answer: rendered as Markdown at most once per frame, and only
  // from its last finished block on (md.update). Renders are spaced by what
  // the last one cost (four times its time), so an answer of one huge block
  // takes at most a fifth of the page's time however fast it streams.
  function live() {
    if (state.live) return state.live;
    const { li, body } = bubble("assistant live", "Agent");
    li.setAttribute("aria-busy", "true");
    const reasoning = el("details", "reasoning");
    reasoning.appendChild(el("summary", "", "Reasoning"));
    const rtext = el("p", "plain");
    reasoning.appendChild(rtext);
    reasoning.hidden = true;
    const text = el("div", "text");
    const images = el("div", "images");
    body.append(reasoning, text, images);
    $("messages").appendChild(li);
    state.live = { li, reasoningEl: reasoning, rtext, textEl: text, images, text: "", reasoning: "", mode: "text", frame: 0, after: 0 };
    scrollDown();
    return state.live;
  }
  function resetLive() {
    const l = live();
    l.text = ""; l.reasoning = ""; l.mode = "text";
    l.images.replaceChildren();
    paintLive();
  }
  function appendLive(t) {
    const l = live();
    if (l.mode === "reasoning") l.reasoning += t; else l.text += t;
    if (!l.frame) l.frame = requestAnimationFrame(nextPaint);
  }
  function nextPaint() {
    const l = state.live;
    if (!l) return;
    if (performance.now() < l.after) l.frame = requestAnimationFrame(nextPaint);
    else paintLive();
  }
  function paintLive() {
    const l = state.live;
    if (!l) return;
    if (l.frame) cancelAnimationFrame(l.frame);
    l.frame = 0;
    const start = performance.now();
    l.reasoningEl.hidden = !l.reasoning;
    l.rtext.textContent = l.reasoning;
    md.update(l.textEl, l.text);
    scrollDown();
    const end = performance.now();
    l.after = end + 4 * (end - start);
  }
  function finishLive() {
    paintLive();
    state.live.li.classList.remove("live");
    state.live.li.removeAttribute("aria-busy");
    state.live = null;
  }
  function dropLive() {
    if (state.live.frame) cancelAnimationFrame(state.live.frame);
    state.live.li.remove();
    state.live = null;
  }
  function setBusy(b) {
    state.busy = b;
    $("busy").hidden = !b;
    $("interrupt").disabled = !b;
  }

  // ---- inspector ------------------------------------------------------------------
  function inspect(ev) {
    const li = el("li", "event");
    const d = el("details");
    const s = el("summary");
    s.appendChild(el("span", "cursor", "#" + ev.cursor));
    s.appendChild(el("code", "etype", ev.type));
    s.appendChild(el("span", "when", when(ev.date)));
    d.appendChild(s);
    d.appendChild(el("pre", "json", JSON.stringify(ev, elide, 2)));
    li.appendChild(d);
    $("events").appendChild(li);
  }
  function elide(k, v) {
    return k === "data" && typeof v === "string" && v.length > 80 ? v.slice(0, 40) + "… (" + v.length + " base64 characters)" : v;
  }
  function noteTurn(id, patch) {
    if (!id) return;
    const t = state.turns.get(id) || {};
    Object.assign(t, Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined && v !== "")));
    state.turns.set(id, t);
    renderTurns();
  }
  function renderTurns() {
    const body = $("turns").tBodies[0];
    body.replaceChildren();
    for (const t of state.turns.values()) {
      if (!t.started) continue;
      const tr = el("tr");
      tr.appendChild(el("td", "", (t.text || "").slice(0, 40)));
      tr.appendChild(el("td", "", t.tokens ? t.tokens.input + " / " + t.tokens.output : "–"));
      const ms = t.ended ? Date.parse(t.ended) - Date.parse(t.started) : NaN;
      tr.appendChild(el("td", "", isNaN(ms) ? "…" : (ms / 1000).toFixed(1) + " s"));
      tr.appendChild(el("td", "", t.outcome || (t.endReason ? t.endReason : t.ended ? "" : "running")));
      body.appendChild(tr);
    }
  }

  // ---- approvals (shown only when the server has the approval API) ------------------
  async function loadApprovals() {
    const id = state.current;
    if (!id || !state.approvals) return;
    let data;
    try {
      data = await api("GET", "/conversations/" + enc(id) + "/approvals");
    } catch (e) {
      if (e.status === 404 && e.code !== "not_found") state.approvals = false; // no such route
      $("approvals").hidden = true;
      return;
    }
    if (state.current !== id) return;
    const items = Array.isArray(data) ? data : (data && (data.approvals || data.pending)) || [];
    const ul = $("approval-list");
    ul.replaceChildren();
    for (const a of items) {
      const card = state.cards.get(a.call_id);
      if (card && !card.res.childNodes.length) card.st.textContent = "waiting for your approval";
      const li = el("li", "approval");
      const h = el("p");
      h.appendChild(document.createTextNode("The agent wants to call "));
      h.appendChild(el("code", "", a.name || "a tool"));
      li.appendChild(h);
      li.appendChild(el("pre", "json", pretty(a.arguments)));
      const yes = el("button", "primary", "Approve");
      const no = el("button", "danger", "Deny");
      yes.type = no.type = "button";
      yes.addEventListener("click", () => answer(a.call_id, true));
      no.addEventListener("click", () => answer(a.call_id, false));
      li.append(yes, no);
      ul.appendChild(li);
    }
    $("approvals").hidden = items.length === 0;
  }
  async function answer(callID, approved) {
    try {
      await api("POST", "/conversations/" + enc(state.current) + "/approvals/" + enc(callID), { approved });
    } catch (e) {
      setStatus("Could not answer: " + e.message, true);
    }
    loadApprovals();
  }

  // ---- tools ---------------------------------------------------------------------------
  async function loadTools() {
    let data;
    try { data = await api("GET", "/tools"); } catch (e) {
      $("tab-tools").hidden = true;
      return;
    }
    $("tab-tools").hidden = false;
    const ul = $("tools");
    ul.replaceChildren();
    for (const t of data.tools || []) {
      const li = el("li");
      const d = el("details");
      const s = el("summary");
      s.appendChild(el("code", "", t.name));
      if (t.source) s.appendChild(el("span", "muted", " · " + t.source));
      d.appendChild(s);
      if (t.description) d.appendChild(el("p", "", t.description));
      d.appendChild(el("pre", "json", pretty(t.parameters)));
      li.appendChild(d);
      ul.appendChild(li);
    }
    if (!(data.tools || []).length) ul.appendChild(el("li", "muted", "No tools."));
    const sv = $("servers");
    sv.replaceChildren();
    for (const h of data.servers || []) {
      const li = el("li", "server " + (h.state || ""));
      li.appendChild(el("strong", "", h.name));
      li.appendChild(document.createTextNode(" (" + (h.transport || "") + "): " + (h.state || "?") + ", " + (h.tools || 0) + " tools"));
      if (h.error) li.appendChild(el("p", "error", h.error));
      sv.appendChild(li);
    }
    if (!(data.servers || []).length) sv.appendChild(el("li", "muted", "No MCP servers configured."));
  }

  // ---- composing -------------------------------------------------------------------------
  // send sends the message box into the open conversation. With none open,
  // it first makes one (the server titles it from this message), sends into
  // it, then opens it: its events from the start show the message and the
  // answer. A message that is not sent stays in the box.
  async function send() {
    const box = $("composer-text");
    const text = box.value.trim();
    const content = [];
    if (text) content.push({ type: "text", text });
    for (const a of state.attachments) content.push({ type: "image", mime: a.mime, data: a.data });
    if (!content.length || state.creating) return;
    let id = state.current;
    const fresh = !id;
    state.creating = fresh; // one new conversation per message, however often Enter is pressed
    $("send").disabled = true;
    try {
      if (fresh) {
        const c = await api("POST", "/conversations", {});
        state.convs.set(c.id, c);
        renderList();
        id = c.id;
      }
      await api("POST", "/conversations/" + enc(id) + "/messages", { content, if_busy: $("if-busy").value });
      box.value = "";
      state.attachments = [];
      renderAttachments();
      setStatus("");
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus(e.code === "busy" ? "The agent is still answering; your message was not sent (If busy: reject)." :
        (id ? "Not sent: " : "Cannot create a conversation: ") + e.message, true);
    } finally {
      $("send").disabled = false;
      state.creating = false;
      if (fresh && id && !state.current && !$("app").hidden) { // still on the new conversation: open the one made
        history.pushState(null, "", "#/c/" + id);
        openConversation(id);
      }
      box.focus();
    }
  }
  async function interrupt() {
    if (!state.current) return;
    try { await api("POST", "/conversations/" + enc(state.current) + "/interrupt"); } catch (e) { setStatus("Interrupt failed: " + e.message, true); }
  }
  function addFiles(files) {
    if (!state.imageInput) { setStatus("This agent does not take images.", true); return; }
    for (const f of files) {
      if (!/^image\/(png|jpeg|gif|webp)$/.test(f.type)) { setStatus(f.name + " is not a PNG, JPEG, GIF or WebP image.", true); continue; }
      const r = new FileReader();
      r.onload = () => {
        const m = /^data:([^;]+);base64,(.*)$/.exec(r.result);
        if (!m) return;
        state.attachments.push({ name: f.name || "pasted image", mime: m[1], data: m[2] });
        renderAttachments();
      };
      r.readAsDataURL(f);
    }
  }
  function renderAttachments() {
    const box = $("attachments");
    box.replaceChildren();
    state.attachments.forEach((a, i) => {
      const fig = el("figure", "attachment");
      fig.appendChild(image(a.mime, a.data, "Image to send: " + a.name));
      const rm = el("button", "", "×");
      rm.type = "button";
      rm.setAttribute("aria-label", "Remove " + a.name);
      rm.addEventListener("click", () => { state.attachments.splice(i, 1); renderAttachments(); });
      fig.appendChild(rm);
      box.appendChild(fig);
    });
  }

  // ---- wiring ------------------------------------------------------------------------------
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("token").value.trim();
    if (!t) return;
    localStorage.setItem(TOKEN_KEY, t);
    $("token").value = "";
    boot();
  });
  $("sign-out").addEventListener("click", () => {
    localStorage.removeItem(TOKEN_KEY);
    state.token = "";
    history.replaceState(null, "", location.pathname);
    showSignIn("");
  });
  $("agent-select").addEventListener("change", (e) => {
    localStorage.setItem(AGENT_KEY, e.target.value);
    history.replaceState(null, "", location.pathname);
    closeStreams();
    boot();
  });
  $("new-conv").addEventListener("click", async () => {
    try {
      const c = await api("POST", "/conversations", {});
      state.convs.set(c.id, c);
      renderList();
      go(c.id);
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus("Cannot create a conversation: " + e.message, true);
    }
  });
  $("more-convs").addEventListener("click", () => loadConversations(state.next));
  $("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  $("composer-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && state.busy && state.current) { e.preventDefault(); interrupt(); }
  });
  $("interrupt").addEventListener("click", interrupt);
  $("image-input").addEventListener("change", (e) => { addFiles(e.target.files); e.target.value = ""; });
  $("composer-text").addEventListener("paste", (e) => {
    const files = [...((e.clipboardData && e.clipboardData.files) || [])];
    if (files.length) { e.preventDefault(); addFiles(files); }
  });
  const composer = $("composer");
  composer.addEventListener("dragover", (e) => { if (state.imageInput) { e.preventDefault(); composer.classList.add("drop"); } });
  composer.addEventListener("dragleave", () => composer.classList.remove("drop"));
  composer.addEventListener("drop", (e) => {
    composer.classList.remove("drop");
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); addFiles(e.dataTransfer.files); }
  });
  $("rename").addEventListener("click", () => {
    const c = state.convs.get(state.current);
    $("rename-input").value = (c && c.title) || "";
    $("rename-form").hidden = false;
    $("conv-title").hidden = true;
    $("rename-input").focus();
  });
  const endRename = () => { $("rename-form").hidden = true; $("conv-title").hidden = false; $("conv-title").focus(); };
  $("rename-cancel").addEventListener("click", endRename);
  $("rename-input").addEventListener("keydown", (e) => { if (e.key === "Escape") { e.stopPropagation(); endRename(); } });
  $("rename-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const id = state.current;
    try {
      const c = await api("PATCH", "/conversations/" + enc(id), { title: $("rename-input").value.trim() });
      state.convs.set(id, c);
      $("conv-title").textContent = c.title || "Untitled conversation";
      renderList();
      endRename();
    } catch (err) {
      setStatus("Rename failed: " + err.message, true);
    }
  });
  $("delete").addEventListener("click", async () => {
    const id = state.current;
    const c = state.convs.get(id);
    if (!confirm("Delete “" + ((c && c.title) || "Untitled conversation") + "” and all its messages?")) return;
    try {
      await api("DELETE", "/conversations/" + enc(id));
      state.convs.delete(id);
      history.replaceState(null, "", location.pathname);
      closeConversation();
      renderList();
      setStatus("Conversation deleted.");
      $("new-conv").focus();
    } catch (err) {
      setStatus("Delete failed: " + err.message, true);
    }
  });
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    tab.addEventListener("click", () => {
      for (const t of document.querySelectorAll('[role="tab"]')) {
        const on = t === tab;
        t.setAttribute("aria-selected", String(on));
        $(t.getAttribute("aria-controls")).hidden = !on;
      }
    });
  }

  boot();
})();
