// Package mcp offers the tools of Model Context Protocol servers to the
// agent: an agentik.ToolSource built on the official Go SDK, configured by a
// Claude-Desktop-style mcp.json (stdio subprocesses, Streamable HTTP and
// legacy SSE servers).
//
// Its guarantee is that one bad server never stalls the agent. Every server
// is supervised on its own: connected in the background (start-up never
// waits for it beyond a short, bounded window), reconnected with backoff when
// it crashes or drops, each call bounded by the caller's context and the
// server's own timeout and abandoned at once (with an MCP cancellation) when
// the turn is interrupted. Failures of any kind become tool results the model
// sees. Stdio servers run in their own process group, which is killed when
// the source closes, and on Linux the kernel kills them if agentik dies.
//
// Tool names are mapped onto what models accept ([A-Za-z0-9_-]{1,64}), made
// unique across servers (a name two servers share is prefixed with the
// server name) and mapped back on every call.
package mcp
