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
    // The conversation's message tree (docs/branching.md), kept from its
    // events: every message of every branch by seq, the seqs that follow
    // each seq (0: the root), and the head. The chat shows the head path.
    msgs: new Map(),
    kids: new Map(),
    head: 0,
    branching: false, // the server keeps a tree (its messages name their parent)
    marks: new Map(), // seq → markers (interrupted, compaction, …) shown after it
    shown: new Set(), // the seqs the chat shows
    rereading: false,
    rereadAgain: false,
    attachments: [],
    creating: false, // a first message is making its conversation
    made: null, // the conversation New conversation is making (a promise), until it opens
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
    probeAutomations();
    probeMemory();
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
    const mem = location.hash === "#/memory";
    if (!mem) showMemory(false);
    if (location.hash === "#/automations") {
      closeConversation();
      showAutomations(true);
      return;
    }
    showAutomations(false);
    if (mem) {
      closeConversation();
      showMemory(true);
      return;
    }
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
    state.msgs.clear();
    state.kids.clear();
    state.marks.clear();
    state.shown.clear();
    state.head = 0;
    state.branching = false;
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
      state.branching = "head" in c;
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
    loadState(id);
    $("composer-text").focus();
  }

  const TYPES = ["user_message", "assistant_message", "tool_call", "tool_result", "tool_failed", "error", "interrupted",
    "conversation_closing", "compaction_triggered", "approval_requested", "approval_resolved",
    "head_moved", "state_updated", "working", "start_reasoning", "start_response", "append_text", "append_image", "end"];

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
      case "user_message":
      case "assistant_message":
      case "tool_call":
      case "tool_result":
      case "tool_failed":
      case "error":
        if (ev.message) message(ev.message, ev.type);
        break;
      case "head_moved": moveHead(ev.to || 0); break;
      case "state_updated": showState(ev.state); break;
      case "interrupted":
        mark({ text: "Interrupted" + (ev.reason ? " (" + reasonText(ev.reason) + ")" : ""), cls: "interrupted" });
        noteTurn(ev.reply_to, { outcome: "interrupted", ended: ev.date });
        break;
      case "conversation_closing": mark({ text: "The conversation is closing.", cls: "closing" }); break;
      case "compaction_triggered": mark({ compaction: ev }); break;
      case "approval_requested":
      case "approval_resolved": loadApprovals(); break;
    }
  }
  // ---- the message tree (docs/branching.md) ------------------------------------
  // A message event joins the tree. One that follows the head becomes the
  // head and is shown at the end of the chat (the common case: nothing
  // branches); one on another branch (an edit whose turn has not started)
  // only joins the tree, and the arrows of its siblings on the path change.
  // A server without branching names no parents: every message follows.
  function message(m, type) {
    if (!m.type) m.type = type === "tool_failed" ? "tool_result" : type;
    const was = state.branching;
    adopt(m);
    if (!state.branching || (m.parent || 0) === state.head) {
      state.head = m.seq;
      if (!state.shown.has(m.seq)) show(m, true);
      if (!was && state.branching) renderChat(); // now known: draw the buttons
    } else {
      renderChat();
    }
  }
  function adopt(m) {
    if (m.parent !== undefined) state.branching = true;
    if (!state.msgs.has(m.seq)) {
      const p = m.parent || 0;
      const k = state.kids.get(p) || [];
      k.push(m.seq);
      k.sort((a, b) => a - b);
      state.kids.set(p, k);
    }
    state.msgs.set(m.seq, m);
  }
  // moveHead follows head_moved: the chat shows the path to the new head,
  // then the journal is read again (every branch) in case the tree lacks
  // a message the stream did not bring.
  function moveHead(to) {
    state.branching = true;
    state.head = to;
    renderChat();
    reread();
  }
  async function reread() {
    const id = state.current;
    if (state.rereading) { state.rereadAgain = true; return; }
    state.rereading = true;
    try {
      let after = 0;
      for (;;) {
        const page = await api("GET", "/conversations/" + enc(id) + "/messages?branch=all&limit=500&after=" + after);
        if (state.current !== id) return;
        for (const m of page.messages || []) adopt(m);
        const n = (page.messages || []).length;
        if (!page.has_more || !n) break;
        after = page.messages[n - 1].seq;
      }
      renderChat();
    } catch (e) {
      console.warn("re-reading the conversation: " + e.message);
    } finally {
      state.rereading = false;
      if (state.rereadAgain && state.current === id) { state.rereadAgain = false; reread(); }
    }
  }
  // pathTo lists the messages from the root to seq.
  function pathTo(seq) {
    if (!state.branching) return [...state.msgs.values()].sort((a, b) => a.seq - b.seq);
    const out = [];
    for (let m = state.msgs.get(seq); m; m = m.parent ? state.msgs.get(m.parent) : null) out.push(m);
    return out.reverse();
  }
  // leafOf is where a branch ends: from seq, the newest message that
  // follows, again and again.
  function leafOf(seq) {
    for (;;) {
      const k = state.kids.get(seq);
      if (!k || !k.length) return seq;
      seq = k[k.length - 1];
    }
  }
  // renderChat draws the head path again, with its markers; the answer
  // being written stays last.
  function renderChat() {
    const list = $("messages");
    const live = state.live && state.live.li.parentNode === list ? state.live.li : null;
    list.replaceChildren();
    state.cards.clear();
    state.shown.clear();
    for (const mk of state.marks.get(0) || []) showMark(mk);
    for (const m of pathTo(state.head)) {
      show(m, false);
      for (const mk of state.marks.get(m.seq) || []) showMark(mk);
    }
    if (live) list.appendChild(live);
    scrollDown();
  }
  function show(m, isLive) {
    state.shown.add(m.seq);
    switch (m.type) {
      case "user_message": userMessage(m); break;
      case "assistant_message": assistantMessage(m, isLive); break;
      case "tool_call": toolCall(m); break;
      case "tool_result": toolResult(m, !!m.is_error); break;
      case "error": errorMessage(m, isLive); break;
    }
  }
  // mark records a marker after the head (so that it comes back when the
  // path is drawn again) and shows it.
  function mark(spec) {
    const list = state.marks.get(state.head) || [];
    list.push(spec);
    state.marks.set(state.head, list);
    showMark(spec);
  }
  function showMark(spec) {
    if (spec.compaction) compaction(spec.compaction);
    else marker(spec.text, spec.cls);
  }

  // branchNav is the "< 2/3 >" of a message that has siblings: the arrows
  // move the head to the newest leaf of the sibling's branch.
  function branchNav(m) {
    const sibs = state.branching ? state.kids.get(m.parent || 0) || [] : [];
    if (sibs.length < 2) return null;
    const i = sibs.indexOf(m.seq);
    const nav = el("span", "branches");
    const prev = el("button", "branch-prev", "‹");
    const next = el("button", "branch-next", "›");
    prev.type = next.type = "button";
    prev.setAttribute("aria-label", "Previous version");
    next.setAttribute("aria-label", "Next version");
    prev.disabled = i <= 0;
    next.disabled = i >= sibs.length - 1;
    prev.addEventListener("click", () => switchTo(sibs[i - 1]));
    next.addEventListener("click", () => switchTo(sibs[i + 1]));
    nav.append(prev, el("span", "branch-pos", i + 1 + "/" + sibs.length), next);
    return nav;
  }
  async function switchTo(seq) {
    try {
      await api("PUT", "/conversations/" + enc(state.current) + "/head", { seq: leafOf(seq) });
      setStatus(""); // the head_moved event redraws the chat
    } catch (e) {
      setStatus(e.code === "busy" ? "The agent is still answering; switch when it is done." : "Cannot switch: " + e.message, true);
    }
  }
  async function regenerate(m) {
    let u = m;
    while (u && u.type !== "user_message") u = u.parent ? state.msgs.get(u.parent) : null;
    try {
      await api("POST", "/conversations/" + enc(state.current) + "/regenerate", u ? { seq: u.seq, if_busy: $("if-busy").value } : { if_busy: $("if-busy").value });
      setStatus("");
    } catch (e) {
      setStatus(e.code === "busy" ? "The agent is still answering (If busy: reject)." : "Cannot regenerate: " + e.message, true);
    }
  }
  // editMessage turns a user message into a form; what it sends is a new
  // version of the message (a sibling), answered on its own branch.
  function editMessage(m, li, body) {
    const form = el("form", "edit");
    const ta = el("textarea");
    ta.rows = 3;
    ta.value = (m.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    ta.setAttribute("aria-label", "Edit your message");
    const save = el("button", "primary", "Send");
    const cancel = el("button", "", "Cancel");
    save.type = "submit";
    cancel.type = "button";
    const done = () => { form.remove(); body.hidden = false; };
    cancel.addEventListener("click", done);
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { e.stopPropagation(); done(); }
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    });
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = ta.value.trim();
      const content = (m.content || []).filter((c) => c.type === "image");
      if (text) content.unshift({ type: "text", text });
      if (!content.length) return;
      save.disabled = true;
      try {
        await api("POST", "/conversations/" + enc(state.current) + "/messages", { content, parent: m.parent || 0, if_busy: $("if-busy").value });
        setStatus("");
        done();
      } catch (err) {
        save.disabled = false;
        setStatus(err.code === "busy" ? "The agent is still answering; your edit was not sent (If busy: reject)." : "Not sent: " + err.message, true);
      }
    });
    form.append(ta, el("div", "edit-row"));
    form.lastChild.append(cancel, save);
    body.hidden = true;
    li.appendChild(form);
    ta.focus();
  }
  // actions is the row under a message: its branch arrows and buttons.
  function actions(m, buttons) {
    const row = el("div", "actions");
    const nav = branchNav(m);
    if (nav) row.appendChild(nav);
    for (const [label, cls, f] of buttons) {
      const b = el("button", "act " + cls, label);
      b.type = "button";
      b.addEventListener("click", f);
      row.appendChild(b);
    }
    return row;
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
    if (state.branching) li.appendChild(actions(m, [["Edit", "edit-msg", () => editMessage(m, li, body)]]));
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
  function assistantMessage(m, isLive) {
    const { li, body } = bubble("assistant", "Agent");
    li.dataset.seq = m.seq;
    if (m.reasoning) body.appendChild(reasoningBlock(m.reasoning));
    contentParts(body, m.content, true, "Agent");
    if (m.interrupted) body.appendChild(el("p", "note", "(answer cut short)"));
    if (state.branching) li.appendChild(actions(m, [["Regenerate", "regen", () => regenerate(m)]]));
    if (isLive && state.live) { state.live.li.replaceWith(li); state.live = null; scrollDown(); } else add(li);
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
    const nav = m.seq && branchNav(m);
    if (nav) li.appendChild(nav);
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
  function errorMessage(m, isLive) {
    const li = el("li", "msg error-msg");
    li.setAttribute("role", "alert");
    li.appendChild(el("span", "who", "Error" + (m.code ? " · " + m.code : "")));
    const text = (m.content || []).map((c) => c.text || "").join(" ");
    li.appendChild(el("p", "plain", m.details || text || "The turn failed."));
    if (state.branching) li.appendChild(actions(m, [["Regenerate", "regen", () => regenerate(m)]]));
    if (isLive && state.live) dropLive();
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

  // ---- shared state (SPEC §19): read when a conversation opens, then each state_updated
  async function loadState(id) {
    try {
      const st = await api("GET", "/conversations/" + enc(id) + "/state");
      if (state.current === id) showState(st);
    } catch (e) { /* a server without the state API shows {} */ }
  }
  function showState(st) {
    $("shared-state").textContent = JSON.stringify(st || {}, null, 2);
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

  // ---- memory blocks and search: #/memory ---------------------------------------------
  // Shown only when the agent has memory (GET /memory is not a 404). Each
  // block is edited in place (PUT) unless read-only; its history is read
  // on demand; the search lists the caller's messages that match, each
  // linked to its conversation.
  async function probeMemory() {
    try {
      await api("GET", "/memory");
      $("mem-link").hidden = false;
    } catch (e) {
      $("mem-link").hidden = true;
    }
  }
  function showMemory(on) {
    $("mem").hidden = !on;
    $("conv").hidden = on;
    $("mem-link").toggleAttribute("aria-current", on);
    if (on) { loadMemory(); $("mem-title").focus(); }
  }
  let memSeq = 0; // a read overtaken by a later one is not shown
  async function loadMemory() {
    const seq = ++memSeq;
    let data;
    try {
      data = await api("GET", "/memory");
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus("Cannot read the memory: " + e.message, true);
      return;
    }
    if ($("mem").hidden || seq !== memSeq) return;
    $("mem-scope").textContent = data.scope === "agent" ? "These blocks are shared by everyone who uses this agent." : "These blocks are yours: the agent sees them in every conversation with you.";
    const ul = $("mem-list");
    ul.replaceChildren();
    for (const b of data.blocks || []) ul.appendChild(memoryBlock(b));
    if (!(data.blocks || []).length) ul.appendChild(el("li", "muted", "No blocks."));
  }
  function memoryBlock(b) {
    const li = el("li", "auto-item mem-block");
    li.dataset.label = b.label;
    const head = el("div", "auto-head");
    head.appendChild(el("strong", "auto-name", b.label));
    const size = el("span", "auto-state", [...b.value].length + " / " + b.limit + " characters" + (b.read_only ? " · read-only" : ""));
    head.appendChild(size);
    li.appendChild(head);
    if (b.description) li.appendChild(el("p", "muted auto-meta", b.description));
    if (b.updated_by) li.appendChild(el("p", "muted auto-meta", "changed by " + b.updated_by + " " + when(b.updated_at)));
    const id = "mem-v-" + b.label;
    const label = el("label", "sr", "Value of " + b.label);
    label.htmlFor = id;
    li.appendChild(label);
    const ta = el("textarea", "mem-value");
    ta.id = id;
    ta.rows = 4;
    ta.value = b.value;
    ta.readOnly = !!b.read_only;
    ta.addEventListener("input", () => { size.textContent = [...ta.value].length + " / " + b.limit + " characters"; });
    li.appendChild(ta);
    const actions = el("div", "auto-head");
    if (!b.read_only) {
      const save = el("button", "primary", "Save");
      save.type = "button";
      save.setAttribute("aria-label", "Save " + b.label);
      save.addEventListener("click", async () => {
        save.disabled = true;
        try {
          await api("PUT", "/memory/blocks/" + enc(b.label), { value: ta.value });
          setStatus("Block " + b.label + " saved.");
          loadMemory();
        } catch (e) {
          setStatus("Block " + b.label + " not saved: " + e.message, true);
          save.disabled = false;
        }
      });
      actions.appendChild(save);
    }
    const hist = el("button", "", "History");
    hist.type = "button";
    hist.setAttribute("aria-label", "History of " + b.label);
    const box = el("div", "mem-history");
    hist.addEventListener("click", () => memoryHistory(b.label, box));
    actions.appendChild(hist);
    li.appendChild(actions);
    li.appendChild(box);
    return li;
  }
  async function memoryHistory(label, box) {
    let data;
    try {
      data = await api("GET", "/memory/blocks/" + enc(label) + "/history");
    } catch (e) {
      box.replaceChildren(el("p", "error", "Cannot read its history: " + e.message));
      return;
    }
    const list = data.history || [];
    if (!list.length) { box.replaceChildren(el("p", "muted", "No changes yet.")); return; }
    const t = el("table", "turns mem-changes");
    const hr = el("tr");
    for (const h of ["When", "By", "Before", "After"]) { const th = el("th", "", h); th.scope = "col"; hr.appendChild(th); }
    t.appendChild(el("thead")).appendChild(hr);
    const body = t.appendChild(el("tbody"));
    for (const c of list) {
      const tr = el("tr");
      tr.appendChild(el("td", "", when(c.date)));
      const by = el("td", "mem-by");
      if (c.conversation_id) {
        const a = el("a", "", c.by);
        a.href = "#/c/" + enc(c.conversation_id);
        by.appendChild(a);
      } else by.textContent = c.by;
      tr.appendChild(by);
      tr.appendChild(el("td", "plain", c.old_value));
      tr.appendChild(el("td", "plain", c.new_value));
      body.appendChild(tr);
    }
    box.replaceChildren(t);
  }
  async function searchMemory() {
    const q = $("mem-q").value.trim();
    const ul = $("mem-hits");
    if (!q) return;
    let data;
    try {
      data = await api("GET", "/memory/search?q=" + enc(q) + "&limit=20");
    } catch (e) {
      ul.replaceChildren(el("li", e.status === 404 ? "muted" : "error", e.status === 404 ? "Search is not available for this agent." : "Search failed: " + e.message));
      return;
    }
    ul.replaceChildren();
    for (const h of data.hits || []) {
      const li = el("li", "auto-item mem-hit");
      const a = el("a", "", (h.role || "") + " · " + when(h.date));
      a.href = "#/c/" + enc(h.conversation_id);
      li.appendChild(a);
      li.appendChild(el("p", "plain", h.snippet || ""));
      ul.appendChild(li);
    }
    if (!(data.hits || []).length) ul.appendChild(el("li", "muted", "Nothing found."));
  }

  // ---- schedules and webhooks: #/automations ------------------------------------------
  // Shown only when the agent has the schedule API (GET /schedules is not a
  // 404). Read when the view opens and on Refresh; each schedule lists its
  // last runs, each webhook its last deliveries.
  const HOOK_EVENTS = ["turn.completed", "turn.failed", "turn.interrupted", "approval.requested",
    "conversation.created", "conversation.deleted", "schedule.run"];
  const RECENT = 5; // runs and deliveries shown per item
  async function probeAutomations() {
    try {
      await api("GET", "/schedules");
      $("auto-link").hidden = false;
    } catch (e) {
      $("auto-link").hidden = true;
    }
  }
  function showAutomations(on) {
    $("auto").hidden = !on;
    $("conv").hidden = on;
    $("auto-link").toggleAttribute("aria-current", on);
    if (on) { loadAutomations(); $("auto-title").focus(); }
  }
  let autoSeq = 0; // a read overtaken by a later one is not shown
  async function loadAutomations() {
    const seq = ++autoSeq;
    let scheds, hooks;
    try {
      [scheds, hooks] = await Promise.all([api("GET", "/schedules"), api("GET", "/webhooks")]);
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus("Cannot list schedules and webhooks: " + e.message, true);
      return;
    }
    const sl = (scheds && scheds.schedules) || [];
    const hl = (hooks && hooks.webhooks) || [];
    const [runs, dels] = await Promise.all([
      Promise.all(sl.map((s) => api("GET", "/schedules/" + enc(s.id) + "/runs").then((r) => r.runs || [], () => null))),
      Promise.all(hl.map((h) => api("GET", "/webhooks/" + enc(h.id) + "/deliveries").then((r) => r.deliveries || [], () => null))),
    ]);
    if ($("auto").hidden || seq !== autoSeq) return;
    renderSchedules(sl, runs);
    renderWebhooks(hl, dels);
  }
  function timing(s) {
    if (s.cron) return "cron " + s.cron + (s.timezone ? " (" + s.timezone + ")" : " (UTC)");
    if (s.every) return "every " + s.every;
    if (s.at) return "once at " + when(s.at);
    return "";
  }
  function firstText(content) {
    const t = (content || []).find((c) => c.type === "text");
    return t ? t.text : "";
  }
  function deleteButton(what, path) {
    const b = el("button", "danger", "Delete");
    b.type = "button";
    b.setAttribute("aria-label", "Delete " + what);
    b.addEventListener("click", async () => {
      if (!confirm("Delete " + what + "?")) return;
      try { await api("DELETE", path); setStatus(what + " deleted."); } catch (e) { setStatus("Delete failed: " + e.message, true); }
      loadAutomations();
    });
    return b;
  }
  function actionButton(label, what, method, path, body, done) {
    const b = el("button", "", label);
    b.type = "button";
    b.setAttribute("aria-label", label + " " + what);
    b.addEventListener("click", async () => {
      b.disabled = true;
      try { await api(method, path, body); setStatus(done); } catch (e) { setStatus(label + " failed: " + e.message, true); }
      loadAutomations();
    });
    return b;
  }
  function renderSchedules(list, runs) {
    const ul = $("sched-list");
    ul.replaceChildren();
    list.forEach((s, i) => {
      const li = el("li", "auto-item schedule" + (s.enabled ? "" : " off"));
      li.dataset.id = s.id;
      const head = el("div", "auto-head");
      head.appendChild(el("strong", "auto-name", s.name || firstText(s.content).slice(0, 60) || s.id));
      head.appendChild(el("span", "auto-state", s.enabled ? "enabled" : "disabled"));
      if (s.source !== "config") {
        const what = "schedule " + (s.name || s.id);
        head.appendChild(actionButton("Run now", what, "POST", "/schedules/" + enc(s.id) + "/run", undefined, "Run started."));
        head.appendChild(actionButton(s.enabled ? "Pause" : "Resume", what, "PATCH", "/schedules/" + enc(s.id), { enabled: !s.enabled },
          s.enabled ? "Schedule paused." : "Schedule resumed."));
        head.appendChild(deleteButton(what, "/schedules/" + enc(s.id)));
      }
      li.appendChild(head);
      const meta = el("p", "muted auto-meta");
      meta.textContent = timing(s) + " · next run " + (s.next_run_at ? when(s.next_run_at) : "none");
      li.appendChild(meta);
      li.appendChild(el("p", "plain", firstText(s.content)));
      li.appendChild(runTable(runs[i]));
      ul.appendChild(li);
    });
    if (!list.length) ul.appendChild(el("li", "muted", "No schedules."));
  }
  function runTable(runs) {
    if (runs === null) return el("p", "error", "Cannot read its runs.");
    if (!runs.length) return el("p", "muted", "No runs yet.");
    const t = el("table", "turns runs");
    const hr = el("tr");
    for (const h of ["Due", "Conversation", "Outcome"]) { const th = el("th", "", h); th.scope = "col"; hr.appendChild(th); }
    t.appendChild(el("thead")).appendChild(hr);
    const body = t.appendChild(el("tbody"));
    for (const r of runs.slice(0, RECENT)) {
      const tr = el("tr");
      tr.appendChild(el("td", "", when(r.due_at) + (r.manual ? " (run now)" : "")));
      const td = el("td");
      if (r.conversation_id && r.outcome !== "skipped") {
        const a = el("a", "", "open");
        a.href = "#/c/" + enc(r.conversation_id);
        td.appendChild(a);
      } else td.textContent = "–";
      tr.appendChild(td);
      tr.appendChild(el("td", "outcome " + r.outcome, r.outcome + (r.error ? ": " + r.error : "")));
      body.appendChild(tr);
    }
    return t;
  }
  function renderWebhooks(list, dels) {
    const ul = $("hook-list");
    ul.replaceChildren();
    list.forEach((h, i) => {
      const li = el("li", "auto-item webhook" + (h.enabled ? "" : " off"));
      li.dataset.id = h.id;
      const head = el("div", "auto-head");
      head.appendChild(el("code", "auto-name", h.url));
      head.appendChild(el("span", "auto-state", h.enabled ? "enabled" : "disabled" + (h.disabled_reason ? ": " + h.disabled_reason : "")));
      if (h.source !== "config") head.appendChild(deleteButton("webhook " + h.url, "/webhooks/" + enc(h.id)));
      li.appendChild(head);
      li.appendChild(el("p", "muted auto-meta", (h.events || []).join(", ") + (h.description ? " · " + h.description : "")));
      li.appendChild(deliveryTable(dels[i]));
      ul.appendChild(li);
    });
    if (!list.length) ul.appendChild(el("li", "muted", "No webhooks."));
  }
  function deliveryTable(dels) {
    if (dels === null) return el("p", "error", "Cannot read its deliveries.");
    if (!dels.length) return el("p", "muted", "No deliveries yet.");
    const t = el("table", "turns deliveries");
    const hr = el("tr");
    for (const h of ["Event", "When", "Status"]) { const th = el("th", "", h); th.scope = "col"; hr.appendChild(th); }
    t.appendChild(el("thead")).appendChild(hr);
    const body = t.appendChild(el("tbody"));
    for (const d of dels.slice(0, RECENT)) {
      const tr = el("tr");
      tr.appendChild(el("td", "", d.event));
      tr.appendChild(el("td", "", when(d.last_attempt_at || d.created_at)));
      let st = d.status + (d.attempts > 1 ? " after " + d.attempts + " attempts" : "");
      if (d.last_status) st += " (HTTP " + d.last_status + ")";
      if (d.last_error) st += ": " + d.last_error;
      tr.appendChild(el("td", "dstatus " + d.status, st));
      body.appendChild(tr);
    }
    return t;
  }
  async function createSchedule() {
    const kind = $("sched-kind").value;
    let v = $("sched-when").value.trim();
    if (kind === "at") {
      const d = new Date(v);
      if (isNaN(d)) { setStatus("At: give a date and time, e.g. 2030-01-01 08:00.", true); return; }
      v = d.toISOString();
    }
    const body = { [kind]: v, content: [{ type: "text", text: $("sched-text").value.trim() }] };
    const tz = $("sched-tz").value.trim();
    if (tz) body.timezone = tz;
    const name = $("sched-name").value.trim();
    if (name) body.name = name;
    try {
      await api("POST", "/schedules", body);
      $("sched-form").reset();
      setStatus("Schedule created.");
    } catch (e) {
      setStatus("Schedule not created: " + e.message, true);
      return;
    }
    loadAutomations();
  }
  async function createWebhook() {
    const events = [...document.querySelectorAll("#hook-events input:checked")].map((c) => c.value);
    const body = { url: $("hook-url").value.trim(), events };
    const desc = $("hook-desc").value.trim();
    if (desc) body.description = desc;
    try {
      const h = await api("POST", "/webhooks", body);
      $("hook-form").reset();
      const p = $("hook-secret");
      p.replaceChildren(document.createTextNode("Its signing secret, shown only now: "), el("code", "", h.secret || ""));
      p.hidden = false;
      setStatus("Webhook created.");
    } catch (e) {
      setStatus("Webhook not created: " + e.message, true);
      return;
    }
    loadAutomations();
  }
  for (const ev of HOOK_EVENTS) {
    const l = el("label", "check");
    const c = el("input");
    c.type = "checkbox";
    c.value = ev;
    l.append(c, document.createTextNode(" " + ev));
    $("hook-events").appendChild(l);
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
    if (!id && state.made) {
      // New conversation was clicked and its conversation is on its way:
      // the message goes there, not to a second conversation made here.
      state.creating = true; // Enter pressed again meanwhile sends nothing twice
      try { id = (await state.made).id; } catch { /* it failed: this message makes one */ }
      state.creating = false;
    }
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
    const made = api("POST", "/conversations", {});
    state.made = made;
    try {
      const c = await made;
      state.convs.set(c.id, c);
      renderList();
      go(c.id);
    } catch (e) {
      if (e.status === 401) return showSignIn("Your token is no longer accepted.");
      setStatus("Cannot create a conversation: " + e.message, true);
    } finally {
      if (state.made === made) state.made = null;
    }
  });
  $("more-convs").addEventListener("click", () => loadConversations(state.next));
  $("auto-refresh").addEventListener("click", loadAutomations);
  $("mem-refresh").addEventListener("click", loadMemory);
  $("mem-search").addEventListener("submit", (e) => { e.preventDefault(); searchMemory(); });
  $("sched-form").addEventListener("submit", (e) => { e.preventDefault(); createSchedule(); });
  $("hook-form").addEventListener("submit", (e) => { e.preventDefault(); createWebhook(); });
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
