// Package httpapi is Agentik's native REST+SSE facade (SPEC §4) and the Go
// client that speaks it.
//
// The server side (NewHandler, Mount) translates HTTP requests into calls on
// an agentik.Agent and back: handlers decode, call the core, encode. It adds
// no state of its own. Its guarantees are those of the protocol:
//
//   - A request that is refused (4xx) has stored nothing: bodies, path ids
//     and query parameters are validated before the core is called.
//   - Errors are always {"error":{"code","message"}} with the status that
//     edge.Status gives the code; internal details go to the log, never to
//     the caller.
//   - Authentication is not done here: the endpoints sit behind the HTTP
//     edge (Options.Guard, package edge), which puts the caller's principal
//     in the request's context.
//   - An SSE subscription is registered before the 200 is written, so a
//     client that resumes from the cursor it last saw receives every durable
//     event exactly once.
//
// The client side (NewClient) implements agentik.Agent over HTTP+SSE, so a
// remote agent can be used as a local one. Its event streams reconnect with
// Last-Event-ID after a dropped connection; see Client.
//
// # Choices the SPEC leaves open
//
//   - Last-Event-ID wins over ?after= when both are given: a browser's
//     EventSource reconnects to the same URL (still carrying the original
//     ?after=) and puts its progress in the header.
//   - limit above its maximum (500) is clamped to the maximum; a limit that is
//     not a positive integer is 422 invalid.
//   - Query parameters that are not integers where integers are expected
//     (after, before, offset, limit, Last-Event-ID) are 422 invalid: the
//     request is well-formed HTTP carrying an invalid value.
//   - A JSON body of the wrong shape ({"temporal":"yes"}, [1,2]) is 422; a
//     body that is not JSON at all, or has trailing data, is 400 malformed.
//   - Path ids that are not ids this system hands out are 404 not_found, like
//     ids that do not exist: a caller learns nothing from the difference.
package httpapi
