// OAuth flow of mcp-remote (the stdio proxy desktop clients run for remote
// MCP servers) against agentik, run by cmd/agentik TestMCPOAuthRealClients.
// mcp-remote meets the 401, discovers and registers itself, and prints the
// authorize URL; headless Chromium opens it, signs in with the Agentik token
// and allows; mcp-remote then proxies MCP on its stdio. The script prints
// one JSON line: what the client saw.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const env = process.env;
const ENDPOINT = env.MCP_URL;
const TOKEN = env.AGENTIK_TOKEN;
const PORT = env.CALLBACK_PORT;

const proxy = spawn(process.execPath, ["node_modules/mcp-remote/dist/proxy.js", ENDPOINT, PORT, "--allow-http", "--transport", "http-only"], {
  env: { ...env, BROWSER: "/bin/false" },
  stdio: ["pipe", "pipe", "pipe"],
});
const stderr = [];
const authURL = new Promise((resolve) => {
  let next = false;
  createInterface({ input: proxy.stderr }).on("line", (line) => {
    stderr.push(line);
    if (next && line.startsWith("http")) resolve(line.trim());
    if (line.includes("Please authorize this client by visiting")) next = true;
  });
});
const replies = new Map();
createInterface({ input: proxy.stdout }).on("line", (line) => {
  try {
    const m = JSON.parse(line);
    if (m.id !== undefined && replies.has(m.id)) replies.get(m.id)(m);
  } catch { /* not JSON-RPC */ }
});
function rpc(id, method, params) {
  const p = new Promise((resolve) => replies.set(id, resolve));
  proxy.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return p;
}
function fail(msg) {
  console.log(JSON.stringify({ error: msg, stderr: stderr.slice(-30) }));
  proxy.kill();
  process.exit(1);
}
setTimeout(() => fail("timed out"), 120000).unref();

const url = await authURL;
const browser = await chromium.launch({
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage();
page.setDefaultTimeout(30000);
await page.goto(url);
const consent = await page.textContent("body");
await page.fill("#token", TOKEN);
// The consent redirects to mcp-remote's callback, which may close the page
// once it has the code: the proxy's own log says when it is done.
const reached = page.waitForURL((u) => u.port === PORT).then(() => true, () => false);
await page.click("#allow");
const callbackReached = await reached;
await browser.close().catch(() => {});

const init = await rpc(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "e2e", version: "1" } });
proxy.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
const tools = await rpc(2, "tools/list", {});
const list = await rpc(3, "tools/call", { name: "list_conversations", arguments: {} });
console.log(JSON.stringify({
  authorizeURL: url,
  consentNamesAgent: consent.includes("Allow access to Agentik"),
  callbackReached,
  server: init.result?.serverInfo?.name ?? null,
  tools: (tools.result?.tools ?? []).map((t) => t.name).sort(),
  listError: list.error ?? list.result?.isError ?? null,
}));
proxy.kill();
process.exit(0);
