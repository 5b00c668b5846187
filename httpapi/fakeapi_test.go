package httpapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

func TestFakeClientRoundTrip(t *testing.T) {
	e := newEnv(t, newFakeAgent(), Options{})
	ctx := testCtx(t)
	c := e.client
	if info := c.Info(); info.Name != "fake" || !info.Capabilities.Streaming {
		t.Fatalf("info = %+v", info)
	}
	info, err := c.CreateConversation(ctx, agentik.CreateRequest{Title: "first"})
	if err != nil || info.Title != "first" {
		t.Fatalf("create: %+v, %v", info, err)
	}
	conv, err := c.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}})
	if err != nil || res.Seq != 1 {
		t.Fatalf("send: %+v, %v", res, err)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].ID != res.MessageID || page.Cursor == 0 {
		t.Fatalf("messages: %+v, %v", page, err)
	}
	if _, err := conv.Rename(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 || list.Conversations[0].Title != "second" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if err := c.DeleteConversation(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Info(ctx); !agentik.IsNotFound(err) {
		t.Fatalf("info after delete: %v", err)
	}
	if _, err := c.Conversation(ctx, "nope"); !agentik.IsNotFound(err) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestFakeBadRequests(t *testing.T) {
	a := newFakeAgent()
	e := newEnv(t, a, Options{MaxBodyBytes: 1024})
	info, _ := a.CreateConversation(testCtx(t), agentik.CreateRequest{})
	msgs := "/agentik/conversations/" + info.ID + "/messages"
	const js = "application/json"
	tests := []struct {
		name, method, path, ct, body string
		status                       int
		code                         string
	}{
		{"malformed", "POST", msgs, js, `{"content":`, 400, agentik.EMalformed},
		{"trailing", "POST", msgs, js, `{"content":[{"type":"text","text":"a"}]}x`, 400, agentik.EMalformed},
		{"empty content", "POST", msgs, js, `{"content":[]}`, 422, agentik.EInvalid},
		{"too large", "POST", msgs, js, `{"content":[{"type":"text","text":"` + strings.Repeat("a", 2000) + `"}]}`, 413, agentik.ETooLarge},
		{"not json", "POST", msgs, "text/plain", `hi`, 415, agentik.EUnsupportedMed},
		{"bad id", "POST", "/agentik/conversations/xyz/messages", js, `{"content":[{"type":"text","text":"a"}]}`, 404, agentik.ENotFound},
		{"unknown", "POST", "/agentik/conversations/" + agentik.NewID() + "/messages", js, `{"content":[{"type":"text","text":"a"}]}`, 404, agentik.ENotFound},
		{"bad limit", "GET", msgs + "?limit=x", "", "", 422, agentik.EInvalid},
		{"no route", "GET", "/agentik/nope", "", "", 404, agentik.ENotFound},
		{"wrong method", "PUT", msgs, js, `{}`, 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.raw(tt.method, tt.path, tt.ct, tt.body)
			if status != tt.status || errorCode(t, body) != tt.code {
				t.Fatalf("%d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	if a.sendCalls != 0 {
		t.Fatalf("the core was called %d times for refused requests", a.sendCalls)
	}
}

func TestFakeSSEResume(t *testing.T) {
	a := newFakeAgent()
	e := newEnv(t, a, Options{})
	ctx := testCtx(t)
	info, _ := a.CreateConversation(ctx, agentik.CreateRequest{})
	conv, _ := a.Conversation(ctx, info.ID)
	for _, s := range []string{"a", "b", "c"} {
		conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(s)}})
	}
	path := "/agentik/conversations/" + info.ID + "/events"
	all := e.openSSE(path + "?after=0")
	if ct := all.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var ids []string
	for range 3 {
		ev := all.next()
		if ev.id == "" || ev.event != agentik.EvUserMessage || ev.id != jsonInt(ev.ev.Cursor) {
			t.Fatalf("event %+v", ev)
		}
		ids = append(ids, ev.id)
	}
	resumed := e.openSSE(path+"?after=0", "Last-Event-ID", ids[1])
	if ev := resumed.next(); ev.id != ids[2] {
		t.Fatalf("resumed at %s, want %s", ev.id, ids[2])
	}
	a.online(info.ID, agentik.Event{Type: agentik.EvAppendText, Text: "x"})
	if ev := resumed.next(); ev.id != "" || ev.event != agentik.EvAppendText {
		t.Fatalf("online event %+v", ev)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestFakeKeepAlive(t *testing.T) {
	a := newFakeAgent()
	e := newEnv(t, a, Options{KeepAlive: 5 * time.Millisecond})
	info, _ := a.CreateConversation(testCtx(t), agentik.CreateRequest{})
	s := e.openSSE("/agentik/conversations/" + info.ID + "/events")
	if b := s.block(); len(b) != 1 || b[0] != ": keep-alive" {
		t.Fatalf("block %q", b)
	}
}

func TestFakeClientReconnects(t *testing.T) {
	a := newFakeAgent()
	e := newEnv(t, a, Options{})
	ctx := testCtx(t)
	info, _ := a.CreateConversation(ctx, agentik.CreateRequest{})
	conv, err := e.client.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	send := func(s string) {
		if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	send("1")
	if ev := recv(t, st); ev.Message.Content[0].Text != "1" {
		t.Fatalf("got %+v", ev)
	}
	// Cut every subscriber off, as the core does with a slow one.
	a.mu.Lock()
	for s := range a.subs {
		s.end(agentik.ErrSlowSubscriber)
		delete(a.subs, s)
	}
	a.mu.Unlock()
	send("2")
	send("3")
	for _, want := range []string{"2", "3"} {
		if ev := recv(t, st); ev.Message.Content[0].Text != want {
			t.Fatalf("got %q, want %q", ev.Message.Content[0].Text, want)
		}
	}
	// Deleting the conversation ends the stream with not_found.
	if err := e.client.DeleteConversation(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	for range st.C() {
	}
	if !agentik.IsNotFound(st.Err()) {
		t.Fatalf("err = %v", st.Err())
	}
}

func TestFakeHealth(t *testing.T) {
	e := newEnv(t, newFakeAgent(), Options{})
	if status, body := e.raw("GET", "/health", "", ""); status != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Fatalf("%d %s", status, body)
	}
}

// TestFakeSlowClient: a client that stops reading must not pin its handler.
// The subscription here never cuts the client off, so only the handler's
// write deadline can free it: the flood outgrows the socket buffers, a write
// blocks, and after WriteTimeout the handler must give up and return.
func TestFakeSlowClient(t *testing.T) {
	a := newFakeAgent()
	a.buffer = 1024
	returned := make(chan struct{}, 1)
	h := NewHandler(a, Options{WriteTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/events") {
			returned <- struct{}{}
		}
	}))
	defer srv.Close()
	info, _ := a.CreateConversation(testCtx(t), agentik.CreateRequest{})

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /agentik/conversations/%s/events HTTP/1.1\r\nHost: test\r\n\r\n", info.ID)
	// Wait until the handler has subscribed, then flood it without reading:
	// 32 MiB is far more than loopback socket buffers hold.
	for subscribers(a) == 0 {
		runtime.Gosched()
	}
	big := strings.Repeat("x", 64<<10)
	for range 512 {
		a.online(info.ID, agentik.Event{Type: agentik.EvAppendText, Text: big})
	}
	select {
	case <-returned:
	case <-testCtx(t).Done():
		t.Fatal("the handler of a client that does not read never returned")
	}
}

func subscribers(a *fakeAgent) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.subs)
}
