// Package agui serves an agentik.Agent to UI clients over AG-UI 1.0
// (https://ag-ui.com): POST a RunAgentInput, receive the run as a
// text/event-stream of AG-UI events.
//
// The facade is a translator and nothing else: it speaks to the core only
// through agentik.Agent and agentik.Conversation, never to a store or a
// model. An AG-UI thread is a conversation (created on first use, owned by the
// caller), a run is one turn. The server is the source of truth: of the
// messages a client sends, only user messages it has not stored yet are
// appended (their AG-UI ids are kept in the stored message's metadata), and
// tool messages answer the frontend tool calls the turn waits for.
//
// Guarantees: input that cannot be decoded is refused with a 4xx and an error
// body before anything is stored or streamed; once the stream is open every
// run is RUN_STARTED … RUN_FINISHED or RUN_ERROR, every START is closed before
// it, and nothing follows it. Frames are "data: <json>\n\n" with LF only,
// optional fields are omitted (never null), timestamps are integer
// milliseconds.
package agui
