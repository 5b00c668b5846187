// Package edge is the HTTP edge every facade of Agentik sits behind. It is
// not a facade: it knows no protocol beyond HTTP, and every facade (native
// REST+SSE, AG-UI, A2A, WebSocket, MCP) is mounted behind it by cmd/agentik.
//
// It does four things, each in exactly one place:
//
//   - Authentication (Edge.Guard): a request is authenticated once, from its
//     headers and before its body is read, and its principal is put in the
//     context (agentik.WithPrincipal), where facades read it. A principal
//     limited to some agents gets 404 on the routes of the others. The
//     ?access_token= query parameter is taken only on routes that declare
//     Stream access (event streams, WebSocket upgrades), whose browser
//     clients cannot set headers.
//   - Bounded body reading (ReadBody, ReadJSON): in size and in time.
//   - Error mapping: the core's error vocabulary (agentik.E*) to each wire
//     format's codes — Status for HTTP, RPCCode for JSON-RPC, Public for
//     formats that carry the core's codes as text (WebSocket ERROR, AG-UI
//     RUN_ERROR). Each facade keeps its own encoder.
//   - Cross-origin requests (Edge.Handler): CORS for an exact list of
//     origins, preflight included, and one access-log line per request.
//     It also puts the trace context of a request's W3C traceparent header
//     in its context (Options.Trace), for every facade alike.
package edge
