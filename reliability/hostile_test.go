package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik"
)

// hostile is one hostile value, put where a facade expects the text of a
// user message. dup is the literal with a second member of the same key
// appended (the facade's text key is filled in for %s).
type hostile struct {
	name    string
	literal string // a JSON fragment in the text's place; %s is the text key
}

// deep returns n nested arrays.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func hostiles() []hostile {
	return []hostile{
		{"deep nesting (600, valid for Go)", `"a","x":` + deep(600)},
		{"deep nesting (20000)", `"a","x":` + deep(20000)},
		{"huge string (2 MiB)", `"` + strings.Repeat("a", 2<<20) + `"`},
		{"invalid UTF-8", "\"caf\xe9 \xff\xfe\""},
		{"invalid UTF-8 in a key", "\"a\",\"\xff\":1"},
		{"escaped NUL", `"a\u0000b"`},
		{"raw NUL", "\"a\x00b\""},
		{"duplicate key", `"a","%s":"b"`},
		{"duplicate key by case", `"a","%S":"b"`}, // %S: the text key upper-cased
		{"number out of range", `1e999`},
		{"lone surrogate escape", `"\ud800"`},
	}
}

// facade sends one user-message body and judges the answer.
type facade struct {
	name    string
	textKey string
	// body wraps the literal into a complete request for conversation conv.
	body func(conv, literal string) string
	// send delivers it and returns a description of a refusal, or an error
	// if the input was not refused the facade's way.
	send func(t *testing.T, s *server, conv, body string) (string, error)
}

func facades() []facade {
	return []facade{
		{
			name: "REST", textKey: "text",
			body: func(conv, lit string) string { return `{"content":[{"type":"text","text":` + lit + `}]}` },
			send: func(t *testing.T, s *server, conv, body string) (string, error) {
				r := do(t, "POST", s.url+"/agentik/conversations/"+conv+"/messages", []byte(body))
				return restRefusal(r)
			},
		},
		{
			name: "AG-UI", textKey: "content",
			body: func(conv, lit string) string {
				return `{"threadId":"` + conv + `","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[{"id":"u1","role":"user","content":` + lit + `}]}`
			},
			send: func(t *testing.T, s *server, conv, body string) (string, error) {
				r := do(t, "POST", s.url+"/agui", []byte(body), "Accept", "text/event-stream")
				return restRefusal(r)
			},
		},
		{
			name: "A2A", textKey: "text",
			body: func(conv, lit string) string {
				return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"` + conv + `","parts":[{"text":` + lit + `}]}}}`
			},
			send: func(t *testing.T, s *server, conv, body string) (string, error) {
				return rpcRefusal(do(t, "POST", s.url+"/a2a", []byte(body)))
			},
		},
		{
			name: "WebSocket", textKey: "text",
			body: func(conv, lit string) string { return `{"type":"USER_MESSAGE","text":` + lit + `}` },
			send: func(t *testing.T, s *server, conv, body string) (string, error) {
				return wsRefusal(t, s, "?conversation_id="+conv, body)
			},
		},
	}
}

// restRefusal wants a 4xx with {"error":{"code","message"}}.
func restRefusal(r reply) (string, error) {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if r.status < 400 || r.status >= 500 || json.Unmarshal(r.body, &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
		return "", fmt.Errorf("not a 4xx error: %d %.200s", r.status, r.body)
	}
	return fmt.Sprintf("%d %s", r.status, e.Error.Code), nil
}

// rpcRefusal wants a JSON-RPC error object (any HTTP status below 500).
func rpcRefusal(r reply) (string, error) {
	var e struct {
		Error *struct {
			Code    int
			Message string
		} `json:"error"`
	}
	if r.status >= 500 || json.Unmarshal(r.body, &e) != nil || e.Error == nil || e.Error.Code >= 0 || e.Error.Message == "" {
		return "", fmt.Errorf("not a JSON-RPC error: %d %.200s", r.status, r.body)
	}
	return fmt.Sprintf("%d rpc %d", r.status, e.Error.Code), nil
}

// wsRefusal connects, sends one frame and wants an ERROR frame, or the
// connection closed with a 1007/1008/1009 status (the protocol's answer to
// frames it will not read), or — before the upgrade — a 4xx.
func wsRefusal(t *testing.T, s *server, query, frame string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/agentik/ws"+query, nil)
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return fmt.Sprintf("%d before the upgrade", resp.StatusCode), nil
		}
		return "", fmt.Errorf("dial: %v", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for sent := false; ; {
		_, b, err := c.Read(ctx)
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusInvalidFramePayloadData, websocket.StatusPolicyViolation, websocket.StatusMessageTooBig:
				return fmt.Sprintf("close %d", websocket.CloseStatus(err)), nil
			}
			return "", fmt.Errorf("read: %v", err)
		}
		var m struct {
			Type    string
			Code    string
			Details string
		}
		json.Unmarshal(b, &m)
		switch m.Type {
		case "STATUS":
			if frame == "" || sent {
				return "", fmt.Errorf("connected: %s", b)
			}
			if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
				return "", fmt.Errorf("write: %v", err)
			}
			sent = true
		case "ERROR":
			if m.Code == "" || m.Details == "" {
				return "", fmt.Errorf("ERROR without code or details: %s", b)
			}
			return "ERROR " + m.Code, nil
		case "AGENT_EVENT":
			return "", fmt.Errorf("accepted: %.200s", b)
		}
	}
}

// stored is what a refused request must leave unchanged.
type stored struct {
	agentCursor, cursor int64
	journal             int
	convs               int
}

func (s *server) stored(t *testing.T, conv string) stored {
	t.Helper()
	ctx := context.Background()
	ac, err := s.store.LastAgentCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.store.LastCursor(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := s.store.Messages(ctx, conv, agentik.MessagesRequest{Limit: agentik.MaxMessagesLimit})
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := s.store.ListConversations(ctx, "", 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	return stored{agentCursor: ac, cursor: c, journal: len(msgs), convs: len(list)}
}

// TestHostileInput sends every hostile value through every facade: each is
// refused the facade's way (4xx with a code, JSON-RPC error, WebSocket
// ERROR), nothing is stored, nothing panics, and the conversation still
// answers a good message afterwards.
func TestHostileInput(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	var table strings.Builder
	for _, f := range facades() {
		for _, h := range hostiles() {
			lit := h.literal
			if strings.Contains(lit, "%s") {
				lit = fmt.Sprintf(lit, f.textKey)
			}
			lit = strings.ReplaceAll(lit, "%S", strings.ToUpper(f.textKey))
			before := s.stored(t, conv)
			got, err := f.send(t, s, conv, f.body(conv, lit))
			if err != nil {
				t.Errorf("%s / %s: %v", f.name, h.name, err)
				continue
			}
			if after := s.stored(t, conv); after != before {
				t.Errorf("%s / %s: refused (%s) but stored something: %+v -> %+v", f.name, h.name, got, before, after)
			}
			fmt.Fprintf(&table, "%-10s %-34s %s\n", f.name, h.name, got)
		}
	}
	t.Logf("hostile input, facade by facade:\n%s", table.String())
	res := s.send(t, conv, "still fine?")
	if res.Seq != 1 {
		t.Fatalf("the good message has seq %d: something was stored before it", res.Seq)
	}
}

// TestHostileIDs: ids with path traversal, encoded slashes, NUL and
// oversized values reach no store path: 4xx (404 for the native API, where an
// id is only ever a name) and nothing stored.
func TestHostileIDs(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	ids := []string{"..%2F..%2Fetc%2Fpasswd", "%2e%2e", "..", "x%00y", "%252e%252e%252f", strings.Repeat("a", 5000), "01a2b3c4-0000-7000-8000-00000000000%2F"}
	before := s.stored(t, conv)
	for _, id := range ids {
		for _, rq := range []struct{ method, path, body string }{
			{"GET", "/agentik/conversations/" + id, ""},
			{"PATCH", "/agentik/conversations/" + id, `{"title":"x"}`},
			{"DELETE", "/agentik/conversations/" + id, ""},
			{"POST", "/agentik/conversations/" + id + "/messages", `{"content":[{"type":"text","text":"x"}]}`},
			{"GET", "/agentik/conversations/" + id + "/messages", ""},
			{"GET", "/agentik/conversations/" + id + "/events?after=0", ""},
		} {
			var body []byte
			if rq.body != "" {
				body = []byte(rq.body)
			}
			r := do(t, rq.method, s.url+rq.path, body)
			if r.status/100 == 3 && (id == ".." || id == "%2e%2e") && !strings.Contains(r.header.Get("Location"), "..") {
				// ServeMux answers a path with dot segments with a redirect to
				// the cleaned path before any handler runs.
				continue
			}
			if _, err := restRefusal(r); err != nil {
				t.Errorf("REST %s %.60s: %v", rq.method, rq.path, err)
			}
		}
		raw := strings.ReplaceAll(strings.ReplaceAll(id, "%2F", "/"), "%00", "\\u0000")
		if _, err := rpcRefusal(do(t, "POST", s.url+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"`+raw+`","parts":[{"text":"x"}]}}}`))); err != nil {
			t.Errorf("A2A contextId %.60s: %v", raw, err)
		}
		if _, err := rpcRefusal(do(t, "POST", s.url+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+raw+`"}}`))); err != nil {
			t.Errorf("A2A task id %.60s: %v", raw, err)
		}
		if _, err := wsRefusal(t, s, "?conversation_id="+id, ""); err != nil {
			t.Errorf("WebSocket conversation_id %.60s: %v", id, err)
		}
	}
	if after := s.stored(t, conv); after != before {
		t.Fatalf("hostile ids stored something: %+v -> %+v", before, after)
	}
	if r := do(t, "GET", s.url+"/agentik/conversations/"+conv, nil); r.status != http.StatusOK {
		t.Fatalf("the real conversation: %d", r.status)
	}
}

// TestHostileNumbers: numbers out of range where the facades expect numbers
// are refused with a 4xx or the protocol's error.
func TestHostileNumbers(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	before := s.stored(t, conv)
	for _, q := range []string{"limit=1e999", "limit=99999999999999999999", "after=-99999999999999999999", "before=18446744073709551616", "offset=-1", "limit=-5", "after=NaN"} {
		if _, err := restRefusal(do(t, "GET", s.url+"/agentik/conversations/"+conv+"/messages?"+q, nil)); err != nil {
			t.Errorf("REST messages?%s: %v", q, err)
		}
	}
	if _, err := restRefusal(do(t, "GET", s.url+"/agentik/conversations/"+conv+"/events?after=99999999999999999999", nil)); err != nil {
		t.Errorf("REST events?after=huge: %v", err)
	}
	for _, body := range []string{`{"temporal":1e999}`, `{"title":1e999}`} {
		if _, err := restRefusal(do(t, "POST", s.url+"/agentik/conversations", []byte(body))); err != nil {
			t.Errorf("REST create %s: %v", body, err)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1e999,"method":"GetTask","params":{"id":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","historyLength":1e999}}`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","historyLength":-99999999999999999999}}`,
	} {
		if _, err := rpcRefusal(do(t, "POST", s.url+"/a2a", []byte(body))); err != nil {
			t.Errorf("A2A %s: %v", body, err)
		}
	}
	if after := s.stored(t, conv); after != before {
		t.Fatalf("out-of-range numbers stored something: %+v -> %+v", before, after)
	}
}
