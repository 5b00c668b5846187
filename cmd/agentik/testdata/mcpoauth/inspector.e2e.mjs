// OAuth flow of the MCP Inspector's CLI against agentik, run by cmd/agentik
// TestMCPOAuthInspector. The CLI meets the 401, discovers the authorization
// server, registers itself and prints the authorize URL (MCP_AUTO_OPEN_ENABLED
// lets it sign in without a TTY; BROWSER=/bin/true stands in for the desktop
// browser it would open); headless Chromium opens that URL, signs in with the
// Agentik token and allows; the CLI's callback listener takes the code, the
// CLI exchanges it and calls the tool. A second run with --stored-auth-only
// lists the tools with the token the first run stored, no browser. The
// script prints one JSON line: what the client saw.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const env = process.env;
const ENDPOINT = env.MCP_URL;
const TOKEN = env.AGENTIK_TOKEN;
const CALLBACK = `http://127.0.0.1:${env.CALLBACK_PORT}/oauth/callback`;
const CLI = "node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js";

// inspector runs the CLI with args; onLine sees each stderr line.
function inspector(args, onLine) {
  const child = spawn(process.execPath, [CLI, "--server-url", ENDPOINT, "--transport", "http", "--callback-url", CALLBACK, "--format", "json", ...args], {
    env: { ...env, MCP_AUTO_OPEN_ENABLED: "true", MCP_INSPECTOR_SECRET_STORE: "file", BROWSER: "/bin/true", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stderr = [];
  createInterface({ input: child.stderr }).on("line", (line) => {
    stderr.push(line);
    onLine?.(line);
  });
  let stdout = "";
  child.stdout.on("data", (d) => (stdout += d));
  const done = new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

function fail(msg, extra) {
  console.log(JSON.stringify({ error: msg, ...extra }));
  process.exit(1);
}
setTimeout(() => fail("timed out"), 150000).unref();

let resolveURL;
const authURL = new Promise((r) => (resolveURL = r));
const call = inspector(["--method", "tools/call", "--tool-name", "ask", "--tool-args-json", JSON.stringify({ message: "Hi" })], (line) => {
  const m = line.match(/Please navigate to: (\S+)/);
  if (m) resolveURL(m[1]);
});
const url = await Promise.race([authURL, call.done]);
if (typeof url !== "string") fail("the CLI ended before asking for a sign-in", url);

const browser = await chromium.launch({
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage();
page.setDefaultTimeout(60000);
await page.goto(url);
const consent = await page.textContent("body");
await page.fill("#token", TOKEN);
// The consent redirects to the CLI's callback listener, which answers with
// its own page once it has the code.
const reached = page.waitForURL((u) => u.href.startsWith(CALLBACK)).then(() => true, () => false);
await page.click("#allow");
const callbackReached = await reached;
const callbackPage = callbackReached ? await page.textContent("body").catch(() => "") : "";
await browser.close().catch(() => {});

const first = await call.done;
let result = null;
try {
  result = JSON.parse(first.stdout);
} catch { /* reported below */ }
if (first.code !== 0 || result === null) fail("tools/call ask", first);

// The stored token serves a second run that may not sign in.
const list = await inspector(["--method", "tools/list", "--stored-auth-only"]).done;
let tools = null;
try {
  tools = JSON.parse(list.stdout);
} catch { /* reported below */ }
if (list.code !== 0 || tools === null) fail("tools/list with the stored token", list);

console.log(JSON.stringify({
  authorizeURL: url,
  consentNamesAgent: consent.includes("Allow access to Agentik"),
  callbackReached,
  callbackPage: callbackPage.trim().slice(0, 200),
  authorizationComplete: first.stderr.some((l) => l.includes("Authorization complete")),
  result,
  tools: (tools.result?.tools ?? []).map((t) => t.name).sort(),
}));
process.exit(0);
