// Drives the CopilotKit page in Debian's Chromium (playwright-core, no
// browser download) against the CopilotKit runtime (server.mjs, started and
// restarted here) in front of Agentik. Run by agui/copilotkit_test.go, which
// starts Agentik with a scripted model that answers by question.
//
// Usage: node drive.mjs AGUI_URL NATIVE_URL STATIC_DIR SETUP_JSON
//   SETUP_JSON: {"threads": {"chat","tool","hitl","interrupt","stop","failure": threadId},
//                "interruptConversation", "chatConversation": the conversation ids
//                Agentik gave the interrupt and chat threads}
// Prints "RESULT <scenario> <json>" per scenario and exits 0 when all held;
// otherwise prints "FAIL <scenario>: <reason>" (and the page's state) and
// exits 1.
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [aguiURL, nativeURL, staticDir, setupJSON] = process.argv.slice(2);
const { threads, interruptConversation, chatConversation } = JSON.parse(setupJSON);
const here = path.dirname(new URL(import.meta.url).pathname);
const timeout = 30_000;

let scenario = "setup";
let runtime; // { proc, port }
let browser;
let page;
const consoleErrors = [];

async function fail(msg) {
  console.log(`FAIL ${scenario}: ${msg}`);
  try {
    if (page) {
      console.log("PAGE " + JSON.stringify(await state()));
      await page.screenshot({ path: path.join(tmpdir(), `agentik-copilotkit-${scenario}.png`) });
      console.log(`SCREENSHOT ${path.join(tmpdir(), `agentik-copilotkit-${scenario}.png`)}`);
    }
  } catch {}
  console.log("CONSOLE " + JSON.stringify(consoleErrors));
  await shutdown();
  process.exit(1);
}

// startRuntime runs server.mjs on port (0: any) and waits for it to listen.
function startRuntime(port) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [path.join(here, "server.mjs"), aguiURL, staticDir, String(port)], {
      cwd: here,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, COPILOTKIT_TELEMETRY_DISABLED: "true", DO_NOT_TRACK: "1" },
    });
    let out = "";
    proc.stdout.on("data", (b) => {
      out += b;
      const m = out.match(/LISTENING (\d+)/);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.on("exit", (code) => reject(new Error(`runtime exited (${code}) before listening: ${out}`)));
  });
}

function stopRuntime(rt) {
  return new Promise((resolve) => {
    rt.proc.removeAllListeners("exit");
    rt.proc.on("exit", () => resolve());
    rt.proc.kill("SIGTERM");
  });
}

async function shutdown() {
  try {
    await browser?.close();
  } catch {}
  if (runtime) await stopRuntime(runtime).catch(() => {});
}

// state is what the chat shows: message texts by role, error banners and
// whether the input is ready.
function state() {
  return page.evaluate(() => ({
    messages: [...document.querySelectorAll(".copilotKitMessage")].map((el) => ({
      role: el.classList.contains("copilotKitUserMessage") ? "user" : "assistant",
      text: el.innerText.trim(),
    })),
    banners: [...document.querySelectorAll('[data-testid="copilot-error-banner"]')].map((el) => el.innerText.trim()),
    coagent: document.querySelector('[data-testid="coagent-state"]')?.textContent ?? null,
    ready: document.querySelector('[data-testid="copilot-send-button"]')?.getAttribute("data-test-id") === "copilot-chat-ready",
  }));
}

async function waitFor(what, pred) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await state();
    if (pred(last)) return last;
    await page.waitForTimeout(50);
  }
  await fail(`timed out waiting for ${what}; last state ${JSON.stringify(last)}`);
}

const assistantTexts = (s) => s.messages.filter((m) => m.role === "assistant").map((m) => m.text);
const userTexts = (s) => s.messages.filter((m) => m.role === "user").map((m) => m.text);

// native calls Agentik's native API (the browser knows nothing of it).
async function native(method, p, body) {
  const res = await fetch(nativeURL + p, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) await fail(`native ${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function open(thread, extra = "") {
  consoleErrors.length = 0;
  await page.goto(`http://127.0.0.1:${runtime.port}/?thread=${encodeURIComponent(thread)}${extra}`);
  await page.waitForSelector('[data-testid="copilot-chat-textarea"]', { timeout });
  await waitFor("the chat to be ready", (s) => s.ready || s.messages.length === 0);
}

// send types text and clicks send once the chat takes it (the button is
// disabled until the agent is connected).
async function send(text) {
  await page.fill('[data-testid="copilot-chat-textarea"]', text);
  await page.click('[data-testid="copilot-send-button"][data-test-id="copilot-chat-ready"]:not([disabled])', { timeout });
  await waitFor(`"${text}" to be sent`, (s) => s.messages.some((m) => m.role === "user" && m.text === text));
}

// clean asserts that nothing went wrong that the user did not cause.
async function clean() {
  const s = await state();
  if (s.banners.length || consoleErrors.length) {
    await fail(`errors shown or logged: ${JSON.stringify({ banners: s.banners, console: consoleErrors })}`);
  }
  return s;
}

const scenarios = {
  // A streamed answer: the page shows the first half while the model holds
  // the rest (the Go test releases it when told), then the whole.
  async chat() {
    await open(threads.chat);
    await send("Hello");
    await waitFor("the first half", (s) => assistantTexts(s).includes("Hello from Agentik,"));
    console.log("RELEASE hello");
    const s = await waitFor("the answer", (s) => s.ready && assistantTexts(s).includes("Hello from Agentik, streamed word by word."));
    await clean();
    return { messages: s.messages.length };
  },

  // A frontend tool with a handler: the page runs it and the turn goes on.
  async tool() {
    await open(threads.tool);
    await send("Pick a color");
    await waitFor("the answer after the tool", (s) => s.ready && assistantTexts(s).some((t) => t.includes("You picked red.")));
    return { ok: (await clean()).messages.length };
  },

  // Human in the loop: a frontend tool without a handler; the user answers.
  async hitl() {
    await open(threads.hitl);
    await send("Order a pizza");
    await page.waitForSelector('[data-testid="approve"]', { timeout });
    await page.click('[data-testid="approve"]');
    await waitFor("the answer after approval", (s) => s.ready && assistantTexts(s).some((t) => t.includes("Order placed: approved.")));
    return { ok: (await clean()).messages.length };
  },

  // The turn is interrupted through Agentik's native API while the page
  // streams it: the page keeps what it got and is ready again, no error.
  async interrupt() {
    await open(threads.interrupt);
    await send("Count slowly");
    await waitFor("the partial answer", (s) => assistantTexts(s).some((t) => t.includes("One, two,")));
    const res = await fetch(`${nativeURL}/conversations/${interruptConversation}/interrupt`, { method: "POST" });
    if (!res.ok) await fail(`native interrupt: ${res.status} ${await res.text()}`);
    const s = await waitFor("the page to be ready", (s) => s.ready);
    if (!assistantTexts(s).some((t) => t.includes("One, two,"))) await fail("the partial answer vanished");
    await clean();
    return { messages: s.messages.length };
  },

  // The Stop button (the send button while a run is in progress).
  async stop() {
    await open(threads.stop);
    await send("Tell a long story");
    await waitFor("the partial answer", (s) => assistantTexts(s).some((t) => t.includes("Once upon a time")));
    await page.click('[data-testid="copilot-send-button"]');
    const s = await waitFor("the page to be ready", (s) => s.ready);
    await clean();
    return { messages: s.messages.length };
  },

  // Regenerate on the chat's answer: a new answer on a new branch, which
  // differs from the first (the model answers differently when asked
  // again). Then the head is switched between the two answers through the
  // native API, and the reloaded page shows the one it points at.
  async regenerate() {
    await open(threads.chat);
    await waitFor("the restored chat", (s) => s.ready && assistantTexts(s).length === 1);
    const first = assistantTexts(await state())[0];
    if (!first.includes("streamed word by word.")) await fail(`restored answer ${JSON.stringify(first)}`);
    await page.click('.copilotKitAssistantMessage button[aria-label="Regenerate response"]');
    const s = await waitFor("the new answer", (s) => s.ready && assistantTexts(s).length === 1 && assistantTexts(s)[0].includes("regenerated"));
    await clean();
    // Both answers are in Agentik's journal, siblings after the question.
    const all = await native("GET", `/conversations/${chatConversation}/messages?branch=all`);
    const answers = all.messages.filter((m) => m.type === "assistant_message");
    if (answers.length !== 2 || answers[0].parent !== answers[1].parent) await fail(`journal ${JSON.stringify(all.messages)}`);
    const shows = async (what, text) => {
      await page.reload();
      await page.waitForSelector('[data-testid="copilot-chat-textarea"]', { timeout });
      return waitFor(what, (s) => assistantTexts(s).length === 1 && assistantTexts(s)[0].includes(text));
    };
    await native("PUT", `/conversations/${chatConversation}/head`, { seq: answers[0].seq });
    await shows("the first answer after switching", "streamed word by word.");
    await native("PUT", `/conversations/${chatConversation}/head`, { seq: answers[1].seq });
    await shows("the new answer after switching back", "regenerated");
    await clean();
    return { messages: s.messages.length, answers: answers.length };
  },

  // Reload with the same threadId after the CopilotKit runtime restarted
  // (its in-memory runner forgot everything): the history comes from Agentik.
  async reload() {
    const port = runtime.port;
    await stopRuntime(runtime);
    runtime = await startRuntime(port);
    await page.reload();
    await page.waitForSelector('[data-testid="copilot-chat-textarea"]', { timeout });
    const s = await waitFor("the history", (s) => userTexts(s).includes("Hello") && assistantTexts(s).some((t) => t.includes("Hello from Agentik")));
    await clean();
    return { messages: s.messages.length };
  },

  // useCoAgent: the page's initial state reaches the agent with the run;
  // the agent changes it (update_state) and the page shows the change.
  async coagent() {
    await open(threads.coagent, "&coagent=1");
    await waitFor("the initial state", (s) => s.coagent === '{"count":1}');
    await send("Count up");
    const s = await waitFor("the agent's change", (s) => s.ready && s.coagent === '{"count":2}' && assistantTexts(s).some((t) => t.includes("Counted.")));
    await clean();
    return { state: s.coagent };
  },

  // The model fails: the user is told; the next message is answered.
  async failure() {
    await open(threads.failure);
    await send("Fail please");
    const failed = await waitFor("the failure to be shown", (s) => s.ready && s.banners.some((b) => b.includes("the model call failed")));
    await page.locator('[data-testid="copilot-error-banner"] button').last().click(); // its close button
    await waitFor("the banner to close", (s) => s.banners.length === 0);
    consoleErrors.length = 0;
    await send("Are you there?");
    await waitFor("the next answer", (s) => s.ready && assistantTexts(s).some((t) => t.includes("Still here.")));
    await clean();
    return { shown: failed.banners };
  },
};

try {
  runtime = await startRuntime(0);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ], // playwright gives the browser a fresh, empty profile
  });
  page = await browser.newPage();
  page.on("console", (msg) => {
    if (msg.type() === "error") consoleErrors.push(msg.text());
  });
  page.on("pageerror", (err) => consoleErrors.push(`pageerror: ${err.message}`));
  page.on("response", (res) => {
    if (res.status() >= 400) consoleErrors.push(`HTTP ${res.status()} ${res.request().method()} ${res.url()}`);
  });
  const list = process.env.SCENARIOS ? process.env.SCENARIOS.split(",") : Object.keys(scenarios);
  for (scenario of list) {
    const t0 = Date.now();
    const out = await scenarios[scenario]();
    console.log(`RESULT ${scenario} ${JSON.stringify({ ...out, ms: Date.now() - t0 })}`);
  }
} catch (err) {
  await fail(err?.stack ?? String(err));
}
await shutdown();
process.exit(0);
