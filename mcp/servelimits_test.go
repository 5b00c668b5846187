package mcp

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawReply is one answer of the facade to a hand-written request.
type rawReply struct {
	status int
	header http.Header
	body   []byte
}

// post sends body as an MCP client at revision v would, within session
// when it is not empty.
func (e *serveEnv) post(token, v, session, body string) rawReply {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(serveCtx(e.t), http.MethodPost, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if v >= ProtocolCurrent { // the current revision names the call in headers too
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "ask")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawReply{resp.StatusCode, resp.Header, b}
}

// rpcRefusal is reply's JSON-RPC error, or a test failure when reply is
// not one with this status.
func rpcRefusal(t *testing.T, what string, reply rawReply, status int) (id json.RawMessage, code int, message string) {
	t.Helper()
	var r struct {
		JSONRPC string
		ID      json.RawMessage
		Error   *struct {
			Code    int
			Message string
		}
	}
	if reply.status != status || reply.header.Get("Content-Type") != "application/json" || json.Unmarshal(reply.body, &r) != nil || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Message == "" {
		t.Errorf("%s: %d %q %.300s, want %d with a JSON-RPC error", what, reply.status, reply.header.Get("Content-Type"), reply.body, status)
		return nil, 0, ""
	}
	return r.ID, r.Error.Code, r.Error.Message
}

// sessions is how many sessions of the previous revisions principal holds.
func (e *serveEnv) sessions(principal string) int {
	f := e.h.front(principal)
	n := 0
	for ss := range f.server.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// callBody is a tools/call of ask with args as the current revision sends
// it (its version in _meta) or the previous ones do.
func callBody(v, args string) string {
	meta := ""
	if v >= ProtocolCurrent {
		meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}},`
	}
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + meta + `"name":"ask","arguments":` + args + `}}`
}

const initializeBody = `{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestServeRefusesJSONBombs: the facade keeps the JSON rules of every other
// endpoint (agentik.CheckJSON) before the SDK decodes anything. An array of
// 1.9 million zeros (3.8 MB, under the body limit) cost the SDK 747 MiB;
// duplicate keys (also by case) and nesting past agentik.MaxJSONDepth
// passed. Each is refused with a JSON-RPC error at both revisions, in a
// session and on the initialize that would open one, and changes nothing.
func TestServeRefusesJSONBombs(t *testing.T) {
	e := newServeEnv(t)
	session := e.connect("tok-alice", ProtocolPrevious).ID()
	deep := strings.Repeat("[", agentik.MaxJSONDepth) + strings.Repeat("]", agentik.MaxJSONDepth)
	bomb := `{"message":[` + strings.TrimSuffix(strings.Repeat("0,", 1_900_000), ",") + `]}`
	type where struct{ v, session string }
	at := []where{{ProtocolCurrent, ""}, {ProtocolPrevious, session}}
	for _, tc := range []struct {
		name    string
		body    func(where) string
		status  int
		rpcCode int
	}{
		{"1.9M-element array", func(w where) string { return callBody(w.v, bomb) }, http.StatusRequestEntityTooLarge, -32600},
		{"duplicate key", func(w where) string { return callBody(w.v, `{"message":"a","message":"b"}`) }, http.StatusBadRequest, -32700},
		{"duplicate key by case", func(w where) string { return callBody(w.v, `{"message":"a","Message":"b"}`) }, http.StatusBadRequest, -32700},
		{"duplicate method by case", func(w where) string {
			return strings.Replace(callBody(w.v, `{"message":"a"}`), `"method":"tools/call"`, `"method":"tools/call","METHOD":"tools/list"`, 1)
		}, http.StatusBadRequest, -32700},
		{"nested too deep", func(w where) string { return callBody(w.v, `{"message":"a","x":`+deep+`}`) }, http.StatusBadRequest, -32700},
		{"lone surrogate", func(w where) string { return callBody(w.v, `{"message":"\ud800"}`) }, http.StatusBadRequest, -32700},
	} {
		for _, w := range at {
			body := tc.body(w)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			reply := e.post("tok-alice", w.v, w.session, body)
			runtime.ReadMemStats(&m1)
			id, code, msg := rpcRefusal(t, tc.name+" at "+w.v, reply, tc.status)
			if code != tc.rpcCode || string(id) != "null" {
				t.Errorf("%s at %s: id %s, code %d (%s), want null and %d", tc.name, w.v, id, code, msg, tc.rpcCode)
			}
			// Reading the body and checking it allocate a few times its
			// size; decoding the array allocated hundreds of MiB.
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%s at %s: %d bytes, %.1f MiB allocated", tc.name, w.v, len(body), float64(alloc)/(1<<20))
			if alloc > 8*uint64(len(body))+(16<<20) {
				t.Errorf("%s at %s: %d MiB allocated for a refused request of %d bytes", tc.name, w.v, alloc>>20, len(body))
			}
		}
	}
	// The initialize that would open a session is refused the same way, and
	// opens none.
	dup := strings.Replace(initializeBody, `"capabilities":{}`, `"capabilities":{},"Capabilities":{"sampling":{}}`, 1)
	if _, code, _ := rpcRefusal(t, "initialize with a duplicate key", e.post("tok-bob", ProtocolPrevious, "", dup), http.StatusBadRequest); code != -32700 {
		t.Errorf("initialize with a duplicate key: code %d", code)
	}
	if n := e.sessions("bob"); n != 0 {
		t.Errorf("a refused initialize left %d sessions", n)
	}
	// The session is still usable, and nothing reached the model.
	if res, err := e.connect("tok-alice", ProtocolPrevious).ListTools(serveCtx(t), nil); err != nil || len(res.Tools) != 3 {
		t.Fatalf("after the refusals: %v", err)
	}
	list, err := e.eng.ListConversations(agentik.WithPrincipal(serveCtx(t), "alice"), agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("refused requests changed something: %v %v, %d model calls", list.Conversations, err, len(e.llm.Requests()))
	}
}

// TestServeSessionCaps: a principal holds at most MaxSessionsPerPrincipal
// sessions (429 beyond), the server at most MaxSessions (503 beyond); a
// refused initialize opens nothing, and a closed session frees its room.
func TestServeSessionCaps(t *testing.T) {
	e := newServeEnv(t, func(o *ServeOptions) { o.MaxSessionsPerPrincipal, o.MaxSessions = 2, 3 })
	alice := []*sdk.ClientSession{e.connect("tok-alice", ProtocolPrevious), e.connect("tok-alice", ProtocolPrevious)}

	// Alice's third: 429 through the SDK's client and by hand, nothing opened.
	if _, err := e.dial("tok-alice", ProtocolPrevious); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("alice's third session through the SDK: %v", err)
	}
	reply := e.post("tok-alice", ProtocolPrevious, "", initializeBody)
	if id, _, msg := rpcRefusal(t, "alice's third session", reply, http.StatusTooManyRequests); string(id) != `"init-1"` || !strings.Contains(msg, "too many open MCP sessions") {
		t.Errorf("alice's third session: id %s, %q", id, msg)
	}
	if n := e.sessions("alice"); n != 2 {
		t.Fatalf("alice holds %d sessions, want 2", n)
	}
	// A call within a session, and the current revision, need no room.
	if _, err := alice[0].ListTools(serveCtx(t), nil); err != nil {
		t.Fatalf("within a session at the cap: %v", err)
	}
	e.connect("tok-alice", ProtocolCurrent)

	// Bob takes the server's last one; his second is past the total: 503.
	e.connect("tok-bob", ProtocolPrevious)
	reply = e.post("tok-bob", ProtocolPrevious, "", initializeBody)
	if _, _, msg := rpcRefusal(t, "past the server's cap", reply, http.StatusServiceUnavailable); !strings.Contains(msg, "as many MCP sessions as it may") || reply.header.Get("Retry-After") == "" {
		t.Errorf("past the server's cap: %q, Retry-After %q", msg, reply.header.Get("Retry-After"))
	}
	if n := e.sessions("bob"); n != 1 {
		t.Fatalf("bob holds %d sessions, want 1", n)
	}

	// A closed session frees its room at once: the client's Close ends
	// with the DELETE, which returns once the session is gone.
	if err := alice[1].Close(); err != nil {
		t.Fatal(err)
	}
	e.connect("tok-bob", ProtocolPrevious)
	if _, err := e.dial("tok-alice", ProtocolPrevious); err == nil {
		t.Fatal("alice's session past the server's cap was opened")
	}
}

// TestServeSessionRate: one principal opens sessions at most SessionBurst
// at once and SessionsPerMinute after; the refusal says when to retry.
// Other principals and the current revision are not held back.
func TestServeSessionRate(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newServeEnv(t, func(o *ServeOptions) { o.SessionsPerMinute, o.SessionBurst, o.now = 60, 3, clock })
	for range 3 {
		e.connect("tok-alice", ProtocolPrevious)
	}
	reply := e.post("tok-alice", ProtocolPrevious, "", initializeBody)
	if id, _, msg := rpcRefusal(t, "alice's fourth session in a burst of 3", reply, http.StatusTooManyRequests); string(id) != `"init-1"` || !strings.Contains(msg, "too fast") || reply.header.Get("Retry-After") != "1" {
		t.Errorf("past the burst: id %s, %q, Retry-After %q, want 1", id, msg, reply.header.Get("Retry-After"))
	}
	if _, err := e.dial("tok-alice", ProtocolPrevious); err == nil {
		t.Fatal("alice's fourth session in a burst of 3 was opened")
	}
	if n := e.sessions("alice"); n != 3 {
		t.Fatalf("alice holds %d sessions, want 3", n)
	}
	// Bob has his own bucket; the current revision opens no session.
	e.connect("tok-bob", ProtocolPrevious)
	e.connect("tok-alice", ProtocolCurrent)

	// A session a second: half a second later there is half a token.
	mu.Lock()
	now = now.Add(500 * time.Millisecond)
	mu.Unlock()
	if _, err := e.dial("tok-alice", ProtocolPrevious); err == nil {
		t.Fatal("a session was opened before the bucket refilled")
	}
	mu.Lock()
	now = now.Add(500 * time.Millisecond)
	mu.Unlock()
	e.connect("tok-alice", ProtocolPrevious)
	if n := e.sessions("alice"); n != 4 {
		t.Fatalf("alice holds %d sessions, want 4", n)
	}
}

func TestBucket(t *testing.T) {
	var b bucket
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if w := b.take(t0, 0.5, 3); w != 0 {
			t.Fatalf("take %d of a burst of 3: wait %s", i, w)
		}
	}
	if w := b.take(t0, 0.5, 3); w != 2*time.Second {
		t.Fatalf("empty: wait %s, want 2s", w)
	}
	if w := b.take(t0.Add(-time.Hour), 0.5, 3); w != 2*time.Second {
		t.Fatalf("a clock that went back: wait %s, want 2s", w)
	}
	if w := b.take(t0.Add(time.Second), 0.5, 3); w != time.Second {
		t.Fatalf("half a token: wait %s, want 1s", w)
	}
	if w := b.take(t0.Add(time.Hour), 0.5, 3); w != 0 {
		t.Fatalf("after an hour: wait %s", w)
	}
	for range 2 {
		b.take(t0.Add(time.Hour), 0.5, 3)
	}
	if w := b.take(t0.Add(time.Hour), 0.5, 3); w == 0 {
		t.Fatal("the bucket held more than its burst")
	}
}

// FuzzRequestID: the id echoed in a refusal is null or the request's own
// string or number id, whatever the body.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{initializeBody, `{"id":1}`, `{"id":null}`, `{"id":{"a":1}}`, `[{"id":1}]`, `{"ID":"x"}`, `{`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id := requestID(b)
		if string(id) == "null" {
			return
		}
		var v any
		if err := json.Unmarshal(id, &v); err != nil {
			t.Fatalf("id %q is not JSON: %v", id, err)
		}
		switch v.(type) {
		case string, float64:
		default:
			t.Fatalf("id %s is neither a string nor a number", id)
		}
		var req map[string]json.RawMessage
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("an id %s from a body that is not an object: %v", id, err)
		}
	})
}
