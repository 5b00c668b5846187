// The CopilotKit runtime in front of Agentik, as a CopilotKit user deploys
// it, plus the built page on the same origin (so no CORS is involved: the
// browser talks to the runtime, the runtime to Agentik's /agui).
//
// Usage: node server.mjs AGUI_URL STATIC_DIR PORT   (PORT 0: any free port)
// Prints "LISTENING <port>" once it serves. Exits on SIGTERM.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { HttpAgent } from "@ag-ui/client";
import { AgentikRunner } from "../../../sdk/copilotkit/agentik-runner.mjs";

const [aguiURL, staticDir, port] = process.argv.slice(2);

const agents = { agentik: new HttpAgent({ url: aguiURL }) };
const runtime = new CopilotRuntime({
  agents,
  runner: new AgentikRunner({ agents, inner: new InMemoryAgentRunner() }),
});
const copilot = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" });

const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".woff2": "font/woff2" };

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  if (url.pathname.startsWith("/api/copilotkit")) return copilot(req, res);
  const rel = url.pathname === "/" ? "index.html" : path.normalize(url.pathname).replace(/^[/\\]+/, "");
  const file = path.join(staticDir, rel);
  if (!file.startsWith(path.resolve(staticDir) + path.sep) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404).end("not found");
    return;
  }
  res.writeHead(200, { "Content-Type": types[path.extname(file)] ?? "application/octet-stream" });
  fs.createReadStream(file).pipe(res);
});

server.listen(Number(port), "127.0.0.1", () => {
  console.log(`LISTENING ${server.address().port}`);
});
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
