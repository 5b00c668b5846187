// Client SDK for Agentik's WebSocket chat protocol (GET /agentik/ws).
//
// One connection is one conversation. connect() resolves once the server has
// sent STATUS; send() posts USER_MESSAGE; the answer arrives as TEXT_CHUNK
// deltas and ends with END. Iterate the connection (for await) to read every
// server message in order. Works with the browser's WebSocket and with
// Node's (Node 22+, or Node 20 with --experimental-websocket).

/** Server → client messages, discriminated by `type` (and `subtype`). */
export type StatusMessage = {
  type: "STATUS";
  /** The conversation this connection is attached to (extra field). */
  conversation_id?: string;
  /** A turn is running (extra field). */
  working?: boolean;
  /** Extensions in effect (extra field). */
  events?: Extension[];
};
export type TextChunkEvent = { type: "AGENT_EVENT"; subtype: "TEXT_CHUNK"; text: string };
export type EndEvent = {
  type: "AGENT_EVENT";
  subtype: "END";
  tokens_used: number;
  /** Why the turn ended (extra field). */
  reason?: "completed" | "interrupted" | "error";
};
/** Extension "reasoning". */
export type ReasoningChunkEvent = { type: "AGENT_EVENT"; subtype: "REASONING_CHUNK"; text: string };
/** Extension "tools". */
export type ToolCallEvent = {
  type: "AGENT_EVENT";
  subtype: "TOOL_CALL";
  call_id: string;
  name: string;
  arguments?: unknown;
};
/** Extension "tools". */
export type ToolResultEvent = {
  type: "AGENT_EVENT";
  subtype: "TOOL_RESULT";
  call_id: string;
  name: string;
  text: string;
  is_error: boolean;
};
/**
 * Tool approval extension (docs/websocket.md): a tool call waits for a
 * person's answer. Sent to every connection of the conversation (no
 * extension needed), and again for each pending call right after STATUS
 * when a connection attaches. Answer with approve() / deny().
 */
export type ApprovalRequestEvent = {
  type: "AGENT_EVENT";
  subtype: "APPROVAL_REQUEST";
  call_id: string;
  name: string;
  /** The call's arguments (a JSON object). */
  arguments?: Record<string, unknown>;
  /** RFC 3339; only when the server has an approval timeout. */
  expires_at?: string;
};
export type AgentEvent = TextChunkEvent | EndEvent | ReasoningChunkEvent | ToolCallEvent | ToolResultEvent | ApprovalRequestEvent;
export type ErrorMessage = {
  type: "ERROR";
  code: string;
  details: string;
  /** The user message whose turn failed (extra field; END follows). */
  reply_to?: string;
};
export type GracefulDisconnectMessage = { type: "GRACEFUL_DISCONNECT"; reason?: "idle" | "shutdown" };
export type ServerMessage = StatusMessage | AgentEvent | ErrorMessage | GracefulDisconnectMessage;

/** Client → server messages. */
export type BusyPolicy = "enqueue" | "interrupt" | "reject";
export type UserMessage = { type: "USER_MESSAGE"; text: string; if_busy?: BusyPolicy };
/** Extension: cancel the running turn. */
export type InterruptMessage = { type: "INTERRUPT" };
/**
 * Extension: the answer to an APPROVAL_REQUEST. `arguments`, only with
 * `approved: true`, replace the call's (a JSON object the tool's schema
 * accepts); `reason` is what the model is told of a denial. Nothing comes
 * back on success; a refusal is an ERROR (invalid, not_found, conflict).
 */
export type ApprovalMessage = {
  type: "APPROVAL";
  call_id: string;
  approved: boolean;
  reason?: string;
  arguments?: Record<string, unknown>;
};
export type ClientMessage = UserMessage | InterruptMessage | ApprovalMessage;

/** The answer to a tool call that waits for approval. */
export type Resolution = { approved: boolean; reason?: string; arguments?: Record<string, unknown> };

/** What ask() calls for each APPROVAL_REQUEST of its turn: true approves, false denies. */
export type OnApproval = (request: ApprovalRequestEvent) => boolean | Resolution | Promise<boolean | Resolution>;

/** A tool call waiting for approval, as the REST API lists it (GET …/approvals). */
export type PendingApproval = {
  conversation_id: string;
  call_id: string;
  name: string;
  arguments: Record<string, unknown>;
  /** The user message whose turn waits. */
  reply_to: string;
  requested_at: string;
  expires_at?: string;
  cursor?: number;
  /** The tool's parameters (JSON Schema), for an edit form. */
  schema?: Record<string, unknown>;
};

export type Extension = "tools" | "reasoning";

/** Stable error codes of the protocol (the core adds busy, not_found, …). */
export const ErrorCodes = {
  malformed: "malformed",
  unknownType: "unknown_type",
  invalid: "invalid",
  tooLarge: "too_large",
  binary: "unsupported_media_type",
} as const;

/** A refused connection or a failed request. */
export class AgentikError extends Error {
  constructor(
    readonly code: string,
    readonly details: string,
  ) {
    super(`${code}: ${details}`);
    this.name = "AgentikError";
  }
}

/**
 * Parses one server frame. Returns undefined for a frame that is not a JSON
 * object with a string `type`; messages of types this SDK does not know are
 * returned as they are (newer servers may add some).
 */
export function parseServerMessage(data: string): ServerMessage | undefined {
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const t = (v as { type?: unknown }).type;
  if (typeof t !== "string" || t === "") return undefined;
  return v as ServerMessage;
}

/** The minimal WebSocket this SDK needs (the browser's, Node's, or `ws`'s). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (ev: any) => void): void;
}
export type WebSocketConstructor = new (url: string, init?: any) => WebSocketLike;

export interface ConnectOptions {
  /** Attach to this conversation; otherwise a new one is created. */
  conversationId?: string;
  /** Title of a new conversation. */
  title?: string;
  /** A new conversation that lives in memory only. */
  temporal?: boolean;
  /** Extensions to receive. */
  events?: Extension[];
  /**
   * Bearer token. In Node it is sent as the Authorization header; browsers
   * cannot set headers, so there it goes as ?access_token=.
   */
  token?: string;
  /** WebSocket implementation; default globalThis.WebSocket. */
  WebSocket?: WebSocketConstructor;
  /** How long to wait for STATUS (default 15 s). */
  timeoutMs?: number;
}

/** How a connection ended. */
export interface CloseInfo {
  code: number;
  reason: string;
  /** The server said GRACEFUL_DISCONNECT first (idle timeout, shutdown). */
  graceful: boolean;
}

const isNode = typeof process !== "undefined" && !!process.versions?.node;

/** Connects and resolves once the server has sent STATUS. */
export function connect(url: string, options: ConnectOptions = {}): Promise<Connection> {
  return Connection.connect(url, options);
}

/** One connection to one conversation. */
export class Connection implements AsyncIterable<ServerMessage> {
  #ws: WebSocketLike;
  #queue: ServerMessage[] = [];
  #waiters: ((r: IteratorResult<ServerMessage>) => void)[] = [];
  #ended = false;
  #graceful = false;
  #closeInfo!: Promise<CloseInfo>;

  private constructor(
    ws: WebSocketLike,
    readonly url: string,
    readonly options: ConnectOptions,
    readonly status: StatusMessage,
  ) {
    this.#ws = ws;
  }

  /** The conversation this connection is attached to. */
  get conversationId(): string {
    return this.status.conversation_id ?? "";
  }

  /** Resolves when the connection has closed. */
  get closed(): Promise<CloseInfo> {
    return this.#closeInfo;
  }

  static connect(url: string, options: ConnectOptions = {}): Promise<Connection> {
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) {
      return Promise.reject(
        new AgentikError("unavailable", "no WebSocket implementation: use Node 22+, --experimental-websocket, or pass options.WebSocket"),
      );
    }
    const u = new URL(url);
    if (u.protocol === "http:") u.protocol = "ws:";
    if (u.protocol === "https:") u.protocol = "wss:";
    if (options.conversationId) {
      u.searchParams.set("conversation_id", options.conversationId);
    } else {
      if (options.title) u.searchParams.set("title", options.title);
      if (options.temporal) u.searchParams.set("temporal", "true");
    }
    if (options.events?.length) u.searchParams.set("events", options.events.join(","));
    let init: unknown;
    if (options.token) {
      if (isNode) init = { headers: { Authorization: `Bearer ${options.token}` } };
      else u.searchParams.set("access_token", options.token);
    }
    const ws = init === undefined ? new Ctor(u.toString()) : new Ctor(u.toString(), init);

    return new Promise<Connection>((resolve, reject) => {
      let conn: Connection | undefined;
      let resolveClosed!: (c: CloseInfo) => void;
      const closed = new Promise<CloseInfo>((r) => (resolveClosed = r));
      let firstError: AgentikError | undefined;
      const timer = setTimeout(() => {
        fail(new AgentikError("unavailable", "no STATUS from the server in time"));
        ws.close();
      }, options.timeoutMs ?? 15000);
      const fail = (e: AgentikError) => {
        clearTimeout(timer);
        reject(e);
      };

      ws.addEventListener("message", (ev: { data: unknown }) => {
        if (typeof ev.data !== "string") return; // the protocol is JSON text
        const m = parseServerMessage(ev.data);
        if (!m) return;
        if (!conn) {
          if (m.type === "STATUS") {
            clearTimeout(timer);
            conn = new Connection(ws, url, options, m);
            conn.#closeInfo = closed;
            resolve(conn);
          } else if (m.type === "ERROR") {
            firstError = new AgentikError(m.code, m.details);
          }
          return;
        }
        conn.#push(m);
      });
      ws.addEventListener("close", (ev: { code: number; reason: string }) => {
        if (!conn) {
          // The server refused the connection: with ERROR after the
          // upgrade, or with an HTTP status the WebSocket API hides.
          fail(firstError ?? new AgentikError("unavailable", `connection closed before STATUS (code ${ev.code})`));
        } else {
          conn.#end();
        }
        resolveClosed({ code: ev.code, reason: ev.reason, graceful: conn ? conn.#graceful : false });
      });
      ws.addEventListener("error", () => {
        // Before STATUS this is a refused handshake (HTTP 401, 503, …: the
        // WebSocket API hides the status) or an unreachable server; some
        // implementations send no close event after it.
        if (!conn) {
          fail(firstError ?? new AgentikError("unavailable", "the connection failed: server unreachable, or the handshake refused (bad token?)"));
          resolveClosed({ code: 1006, reason: "", graceful: false });
        }
      });
    });
  }

  #push(m: ServerMessage) {
    if (m.type === "GRACEFUL_DISCONNECT") this.#graceful = true;
    const w = this.#waiters.shift();
    if (w) w({ value: m, done: false });
    else this.#queue.push(m);
  }

  #end() {
    this.#ended = true;
    for (const w of this.#waiters.splice(0)) w({ value: undefined, done: true });
  }

  /** The next server message, or undefined once the connection has ended. */
  next(): Promise<ServerMessage | undefined> {
    const m = this.#queue.shift();
    if (m) return Promise.resolve(m);
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push((r) => resolve(r.done ? undefined : r.value)));
  }

  /** Every server message in order, until the connection ends. */
  async *[Symbol.asyncIterator](): AsyncIterator<ServerMessage> {
    for (;;) {
      const m = await this.next();
      if (m === undefined) return;
      yield m;
    }
  }

  #write(m: ClientMessage) {
    if (this.#ws.readyState !== 1) throw new AgentikError("unavailable", "the connection is not open");
    this.#ws.send(JSON.stringify(m));
  }

  /** Sends USER_MESSAGE. A refusal arrives as an ERROR message. */
  send(text: string, options: { ifBusy?: BusyPolicy } = {}): void {
    const m: UserMessage = { type: "USER_MESSAGE", text };
    if (options.ifBusy) m.if_busy = options.ifBusy;
    this.#write(m);
  }

  /** Asks the server to cancel the running turn; its END follows. */
  interrupt(): void {
    this.#write({ type: "INTERRUPT" });
  }

  /**
   * Approves the waiting tool call `callId` (an APPROVAL_REQUEST's),
   * optionally with edited `arguments` that replace the call's. Nothing
   * comes back on success: the turn goes on. A refusal arrives as an ERROR
   * (invalid, not_found, conflict).
   */
  approve(callId: string, options: { arguments?: Record<string, unknown>; reason?: string } = {}): void {
    this.answer(callId, { approved: true, ...options });
  }

  /** Denies the waiting tool call `callId`; the model is told "denied by the user: <reason>". */
  deny(callId: string, reason?: string): void {
    this.answer(callId, reason === undefined ? { approved: false } : { approved: false, reason });
  }

  /** Sends APPROVAL for `callId` (approve() and deny() are the short forms). */
  answer(callId: string, r: Resolution): void {
    const m: ApprovalMessage = { type: "APPROVAL", call_id: callId, approved: r.approved };
    if (r.reason !== undefined) m.reason = r.reason;
    if (r.arguments !== undefined) m.arguments = r.arguments;
    this.#write(m);
  }

  /**
   * The tool calls waiting for approval in this conversation, from the REST
   * API next to the WebSocket endpoint (the connect URL without its /ws).
   */
  pendingApprovals(): Promise<PendingApproval[]> {
    return listApprovals(apiBase(this.url), this.conversationId, { token: this.options.token });
  }

  /**
   * Sends text and collects the answer up to its END. Other messages that
   * arrive meanwhile (tool activity, approval requests, errors) are returned
   * in `events`. Each APPROVAL_REQUEST is answered with `onApproval`'s
   * verdict; without it ask waits until someone answers elsewhere. Use it
   * when nothing else reads this connection.
   */
  async ask(text: string, options: { onApproval?: OnApproval } = {}): Promise<{ text: string; end: EndEvent; events: ServerMessage[] }> {
    this.send(text);
    let out = "";
    const events: ServerMessage[] = [];
    for (;;) {
      const m = await this.next();
      if (m === undefined) throw new AgentikError("unavailable", "the connection ended before END");
      if (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK") out += m.text;
      else if (m.type === "AGENT_EVENT" && m.subtype === "END") return { text: out, end: m, events };
      else {
        events.push(m);
        if (m.type === "AGENT_EVENT" && m.subtype === "APPROVAL_REQUEST" && options.onApproval) {
          const v = await options.onApproval(m);
          this.answer(m.call_id, typeof v === "boolean" ? { approved: v } : v);
        }
      }
    }
  }

  /** Closes normally; resolves when closed. Idempotent. */
  close(): Promise<CloseInfo> {
    if (this.#ws.readyState < 2) this.#ws.close(1000);
    return this.#closeInfo;
  }

  /**
   * Connects again to the same conversation, retrying with a doubling delay
   * (100 ms up to 5 s) while the server is unreachable, until `signal`
   * aborts. A refusal for good (unauthorized, not_found, invalid) rejects
   * at once. This connection is closed first.
   */
  async reconnect(signal?: AbortSignal): Promise<Connection> {
    await this.close();
    let delay = 100;
    for (;;) {
      try {
        return await Connection.connect(this.url, { ...this.options, conversationId: this.conversationId });
      } catch (e) {
        if (!(e instanceof AgentikError) || e.code !== "unavailable" || signal?.aborted) throw e;
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  }
}

// --- REST: tool approval ------------------------------------------------------

/** The REST prefix of a WebSocket endpoint URL: ws://h/agentik/ws → http://h/agentik. */
export function apiBase(wsUrl: string): string {
  const u = new URL(wsUrl);
  if (u.protocol === "ws:") u.protocol = "http:";
  if (u.protocol === "wss:") u.protocol = "https:";
  u.pathname = u.pathname.replace(/\/ws\/?$/, "");
  u.search = "";
  u.hash = "";
  return u.toString().replace(/\/$/, "");
}

export interface RestOptions {
  /** Bearer token. */
  token?: string;
  /** fetch implementation; default globalThis.fetch. */
  fetch?: typeof fetch;
}

async function rest(base: string, method: string, path: string, body: unknown, options: RestOptions): Promise<unknown> {
  const f = options.fetch ?? globalThis.fetch;
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let res: Response;
  try {
    res = await f(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new AgentikError("unavailable", `cannot reach ${base}: ${String(e)}`);
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const err = (data as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    if (err && typeof err.code === "string") throw new AgentikError(err.code, String(err.message ?? ""));
    throw new AgentikError(`http_${res.status}`, `HTTP ${res.status} ${res.statusText}`);
  }
  return data;
}

const convPath = (conversationId: string) => `/conversations/${encodeURIComponent(conversationId)}`;

/**
 * The tool calls waiting for approval in a conversation (GET
 * {api}/conversations/{id}/approvals). `api` is the REST prefix, e.g.
 * http://localhost:8080/agentik (see apiBase).
 */
export async function listApprovals(api: string, conversationId: string, options: RestOptions = {}): Promise<PendingApproval[]> {
  const data = (await rest(api, "GET", convPath(conversationId) + "/approvals", undefined, options)) as { approvals: PendingApproval[] };
  return data.approvals;
}

/**
 * Answers a tool call that waits for approval (POST
 * {api}/conversations/{id}/approvals/{callId}). Rejects with AgentikError
 * not_found (no such call waits, or not your conversation), conflict
 * (answered already, expired, interrupted) or invalid (arguments the
 * tool's schema refuses, or arguments with a denial).
 */
export async function resolveApproval(api: string, conversationId: string, callId: string, r: Resolution, options: RestOptions = {}): Promise<void> {
  await rest(api, "POST", convPath(conversationId) + "/approvals/" + encodeURIComponent(callId), r, options);
}

// --- REST: messages and branching (docs/branching.md) -----------------------

/** A part of a message's content. */
export type ContentPart = { type: "text"; text: string } | { type: "image"; mime: string; data: string };

/**
 * One message of a conversation's journal, as the REST API shows it. On a
 * branching server each message names the message it follows (`parent`,
 * absent for the first) and the seqs of the other messages that follow the
 * same parent (`siblings`, with its own seq, in order: the "2/3" of a
 * chat UI).
 */
export type JournalMessage = {
  id: string;
  conversation_id: string;
  seq: number;
  date: string;
  /** user_message, assistant_message, tool_call, tool_result, error, … */
  type: string;
  content?: ContentPart[];
  reply_to?: string;
  interrupted?: boolean;
  parent?: number;
  siblings?: number[];
  [field: string]: unknown;
};

/** One page of a journal; subscribe to events from `cursor` to miss nothing. */
export type MessagePage = { messages: JournalMessage[]; has_more: boolean; cursor: number };

/** The answer to an accepted message or regenerate (202). */
export type SendResult = { message_id: string; seq: number };

/** A conversation as the REST API shows it. */
export type ConversationInfo = {
  id: string;
  title?: string;
  temporal: boolean;
  created_at: string;
  updated_at: string;
  working: boolean;
  /** A fork: the conversation and message it was copied from. */
  forked_from?: { conversation_id: string; seq: number };
  [field: string]: unknown;
};

/**
 * Sends a user message over REST (POST {api}/conversations/{id}/messages).
 * `parent` is the seq of the message it follows (default: the head); a
 * parent before the head is an edit, a new branch that becomes the head.
 * Rejects with AgentikError not_found (no such conversation, or no such
 * parent), invalid (a parent a turn cannot follow), busy (ifBusy "reject"
 * while a turn runs).
 */
export async function sendMessage(
  api: string,
  conversationId: string,
  content: string | ContentPart[],
  params: { parent?: number; ifBusy?: BusyPolicy } = {},
  options: RestOptions = {},
): Promise<SendResult> {
  const body: Record<string, unknown> = { content: typeof content === "string" ? [{ type: "text", text: content }] : content };
  if (params.parent !== undefined) body.parent = params.parent;
  if (params.ifBusy) body.if_busy = params.ifBusy;
  return (await rest(api, "POST", convPath(conversationId) + "/messages", body, options)) as SendResult;
}

/**
 * Answers a user message again on a new branch (POST
 * {api}/conversations/{id}/regenerate): `seq` is the user message (default:
 * the head path's last one). The new answer becomes the head; the old one
 * stays a sibling. Rejects with not_found (no such message) or invalid (not
 * a user message), busy as sendMessage.
 */
export async function regenerate(
  api: string,
  conversationId: string,
  params: { seq?: number; ifBusy?: BusyPolicy } = {},
  options: RestOptions = {},
): Promise<SendResult> {
  const body: Record<string, unknown> = {};
  if (params.seq !== undefined) body.seq = params.seq;
  if (params.ifBusy) body.if_busy = params.ifBusy;
  return (await rest(api, "POST", convPath(conversationId) + "/regenerate", body, options)) as SendResult;
}

/**
 * Moves the conversation's head to message `seq` (PUT
 * {api}/conversations/{id}/head): the path up to it is what the model and
 * every front door see from now on. Subscribers get head_moved. Resolves
 * with the server's answer.
 */
export async function setHead(api: string, conversationId: string, seq: number, options: RestOptions = {}): Promise<unknown> {
  return rest(api, "PUT", convPath(conversationId) + "/head", { seq }, options);
}

/**
 * One page of a conversation's messages (GET
 * {api}/conversations/{id}/messages): the head path, or with branch "all"
 * every message of every branch. `after` is a seq (pass the last one of a
 * page for the next).
 */
export async function listMessages(
  api: string,
  conversationId: string,
  params: { branch?: "all"; after?: number; limit?: number } = {},
  options: RestOptions = {},
): Promise<MessagePage> {
  const q = new URLSearchParams();
  if (params.branch) q.set("branch", params.branch);
  if (params.after !== undefined) q.set("after", String(params.after));
  if (params.limit !== undefined) q.set("limit", String(params.limit));
  const s = q.toString();
  return (await rest(api, "GET", convPath(conversationId) + "/messages" + (s ? "?" + s : ""), undefined, options)) as MessagePage;
}

/**
 * Copies the path up to message `seq` (default: the head) into a new
 * conversation of the same owner (POST {api}/conversations/{id}/fork);
 * resolves with it (its `forked_from` names the source).
 */
export async function fork(api: string, conversationId: string, params: { seq?: number } = {}, options: RestOptions = {}): Promise<ConversationInfo> {
  const body: Record<string, unknown> = {};
  if (params.seq !== undefined) body.seq = params.seq;
  return (await rest(api, "POST", convPath(conversationId) + "/fork", body, options)) as ConversationInfo;
}
