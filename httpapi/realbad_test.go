package httpapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// TestRealBadRequests sends one bad request per row and checks both the
// answer (status and error body) and that nothing was stored: the journal,
// its cursor and the conversation list are unchanged and the model was never
// called.
func TestRealBadRequests(t *testing.T) {
	e := newRealEnv(t, Options{MaxBodyBytes: 4096})
	ctx := testCtx(t)
	conv := e.create()
	gone := e.create()
	if err := e.client.DeleteConversation(ctx, gone.ID()); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(conv.ID())

	p := "/agentik/conversations/"
	msgs := p + conv.ID() + "/messages"
	const js = "application/json"
	ok := `{"content":[{"type":"text","text":"hi"}]}`
	tests := []struct {
		name, method, path, ct, body string
		status                       int
		code                         string
	}{
		{"malformed json", "POST", msgs, js, `{"content":[`, 400, agentik.EMalformed},
		{"trailing garbage", "POST", msgs, js, ok + `{}`, 400, agentik.EMalformed},
		{"no body", "POST", msgs, js, ``, 400, agentik.EMalformed},
		{"body not an object", "POST", msgs, js, `["hi"]`, 422, agentik.EInvalid},
		{"content of wrong type", "POST", msgs, js, `{"content":"hi"}`, 422, agentik.EInvalid},
		{"empty content", "POST", msgs, js, `{"content":[]}`, 422, agentik.EInvalid},
		{"empty text", "POST", msgs, js, `{"content":[{"type":"text","text":""}]}`, 422, agentik.EInvalid},
		{"unknown content type", "POST", msgs, js, `{"content":[{"type":"audio","data":"aGk="}]}`, 422, agentik.EInvalid},
		{"bad base64", "POST", msgs, js, `{"content":[{"type":"image","mime":"image/png","data":"not base64!"}]}`, 422, agentik.EInvalid},
		{"image with unknown mime", "POST", msgs, js, `{"content":[{"type":"image","mime":"image/tiff","data":"aGk="}]}`, 422, agentik.EInvalid},
		{"image the model cannot take", "POST", msgs, js, `{"content":[{"type":"image","mime":"image/png","data":"aGk="}]}`, 422, agentik.EInvalid},
		// What another front door sets on its messages is not a client's to
		// write: an IRC line's mask, another door's channel, its message ids.
		{"forged irc origin and mask", "POST", msgs, js, `{"content":[{"type":"text","text":"hi"}],"context":{"origin":{"channel":"irc","user":"bob"},"metadata":{"irc_source":"bob!bob@agentik/user"}}}`, 422, agentik.EInvalid},
		{"forged irc mask", "POST", msgs, js, `{"content":[{"type":"text","text":"hi"}],"context":{"metadata":{"irc_source":"bob!bob@h"}}}`, 422, agentik.EInvalid},
		{"forged a2a origin", "POST", msgs, js, `{"content":[{"type":"text","text":"hi"}],"context":{"origin":{"channel":"a2a"}}}`, 422, agentik.EInvalid},
		{"forged agui message id", "POST", msgs, js, `{"content":[{"type":"text","text":"hi"}],"context":{"metadata":{"agui_message_id":"m1"}}}`, 422, agentik.EInvalid},
		{"bad if_busy", "POST", msgs, js, `{"content":[{"type":"text","text":"hi"}],"if_busy":"sometimes"}`, 422, agentik.EInvalid},
		{"oversized body", "POST", msgs, js, `{"content":[{"type":"text","text":"` + strings.Repeat("a", 5000) + `"}]}`, 413, agentik.ETooLarge},
		{"wrong content type", "POST", msgs, "text/plain", ok, 415, agentik.EUnsupportedMed},
		{"form content type", "POST", msgs, "application/x-www-form-urlencoded", ok, 415, agentik.EUnsupportedMed},
		{"no content type", "POST", msgs, "", ok, 415, agentik.EUnsupportedMed},
		{"unknown conversation", "POST", p + agentik.NewID() + "/messages", js, ok, 404, agentik.ENotFound},
		{"deleted conversation", "POST", p + gone.ID() + "/messages", js, ok, 404, agentik.ENotFound},
		{"bad id", "POST", p + "1234/messages", js, ok, 404, agentik.ENotFound},
		{"bad id with dots", "GET", p + "..%2f..%2fetc/messages", "", "", 404, agentik.ENotFound},
		{"get deleted", "GET", p + gone.ID(), "", "", 404, agentik.ENotFound},
		{"patch deleted", "PATCH", p + gone.ID(), js, `{"title":"x"}`, 404, agentik.ENotFound},
		{"patch without title", "PATCH", p + conv.ID(), js, `{"name":"x"}`, 422, agentik.EInvalid},
		{"patch title not a string", "PATCH", p + conv.ID(), js, `{"title":5}`, 422, agentik.EInvalid},
		{"patch malformed", "PATCH", p + conv.ID(), js, `{title:"x"}`, 400, agentik.EMalformed},
		{"patch not json", "PATCH", p + conv.ID(), "text/plain", `{"title":"x"}`, 415, agentik.EUnsupportedMed},
		{"create malformed", "POST", "/agentik/conversations", js, `{"title":`, 400, agentik.EMalformed},
		{"create wrong types", "POST", "/agentik/conversations", js, `{"temporal":"yes"}`, 422, agentik.EInvalid},
		{"create not json", "POST", "/agentik/conversations", "text/plain", `{}`, 415, agentik.EUnsupportedMed},
		{"create oversized", "POST", "/agentik/conversations", js, `{"title":"` + strings.Repeat("a", 5000) + `"}`, 413, agentik.ETooLarge},
		{"delete bad id", "DELETE", p + "nope", "", "", 404, agentik.ENotFound},
		{"delete deleted", "DELETE", p + gone.ID(), "", "", 404, agentik.ENotFound},
		{"interrupt unknown", "POST", p + agentik.NewID() + "/interrupt", "", "", 404, agentik.ENotFound},
		{"bad limit", "GET", msgs + "?limit=ten", "", "", 422, agentik.EInvalid},
		{"zero limit", "GET", msgs + "?limit=0", "", "", 422, agentik.EInvalid},
		{"negative after", "GET", msgs + "?after=-3", "", "", 422, agentik.EInvalid},
		{"bad offset", "GET", msgs + "?offset=1e3", "", "", 422, agentik.EInvalid},
		{"bad list limit", "GET", "/agentik/conversations?limit=-1", "", "", 422, agentik.EInvalid},
		{"bad list token", "GET", "/agentik/conversations?before=garbage", "", "", 422, agentik.EInvalid},
		{"bad events cursor", "GET", p + conv.ID() + "/events?after=x", "", "", 422, agentik.EInvalid},
		{"events of unknown", "GET", p + agentik.NewID() + "/events", "", "", 404, agentik.ENotFound},
		{"events of deleted", "GET", p + gone.ID() + "/events?after=0", "", "", 404, agentik.ENotFound},
		{"bad agent events cursor", "GET", "/agentik/events?after=-1", "", "", 422, agentik.EInvalid},
		{"unknown endpoint", "GET", "/agentik/conversations/" + conv.ID() + "/nope", "", "", 404, agentik.ENotFound},
		{"wrong method", "PUT", p + conv.ID(), js, `{}`, 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.raw(tt.method, tt.path, tt.ct, tt.body)
			if status != tt.status || errorCode(t, body) != tt.code {
				t.Fatalf("%d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	if after := e.snapshot(conv.ID()); after != before {
		t.Fatalf("refused requests changed state:\nbefore %s\nafter  %s", before, after)
	}
	if n := len(e.llm.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}

// snapshot captures what a refused request must not change: the
// conversation, its journal and cursor, and the conversation list.
func (e *realEnv) snapshot(id string) string {
	e.t.Helper()
	var parts []string
	for _, path := range []string{"/agentik/conversations/" + id, "/agentik/conversations/" + id + "/messages", "/agentik/conversations"} {
		status, body := e.raw("GET", path, "", "")
		if status != http.StatusOK {
			e.t.Fatalf("GET %s: %d %s", path, status, body)
		}
		parts = append(parts, string(body))
	}
	return strings.Join(parts, "\n")
}

// TestRealInternalErrorHidden: a failure inside the core that carries no
// error code is a 500 with a generic message; the detail goes to the log.
// A store that is down is 503 unavailable.
func TestRealInternalErrorHidden(t *testing.T) {
	e := newRealEnv(t, Options{})
	var logs bytes.Buffer
	h := NewHandler(failingList{e.eng}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/agentik/conversations", nil))
	if rec.Code != http.StatusInternalServerError || strings.TrimSpace(rec.Body.String()) != `{"error":{"code":"internal","message":"internal error"}}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "10.0.0.5") {
		t.Fatalf("the detail was not logged: %s", logs.String())
	}

	e.store.Close()
	status, body := e.raw("POST", "/agentik/conversations", "application/json", `{}`)
	if status != http.StatusServiceUnavailable || errorCode(t, body) != agentik.EUnavailable {
		t.Fatalf("create with the store closed: %d %s", status, body)
	}
}

// failingList is the real engine whose list fails the way a bug would: with
// a plain error full of internal detail.
type failingList struct{ agentik.Agent }

func (failingList) ListConversations(context.Context, agentik.ListRequest) (agentik.ConversationList, error) {
	return agentik.ConversationList{}, errors.New("scan conversations: dial tcp 10.0.0.5:5432: connection refused")
}
