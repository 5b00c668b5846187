package httpapi

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

// pausedReply streams first, then waits at gate, then streams rest.
func pausedReply(gate *llmtest.Gate, first, rest string) llmtest.Reply {
	return llmtest.Stream().Role().Content(first).Pause(gate).Content(rest).Finish("stop").Usage(3, 2).Done()
}

// startPausedTurn sends a message whose answer stops after first, and
// returns once the engine has published that text (seen on a live stream),
// so the partial text is known to the engine.
func (e *realEnv) startPausedTurn(conv agentik.Conversation, gate *llmtest.Gate, first, rest string) agentik.SendResult {
	e.t.Helper()
	ctx := testCtx(e.t)
	e.llm.Enqueue(pausedReply(gate, first, rest))
	watch, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		e.t.Fatal(err)
	}
	defer watch.Close()
	res, err := conv.Send(ctx, text("question"))
	if err != nil {
		e.t.Fatal(err)
	}
	for {
		ev := recv(e.t, watch)
		if ev.Type == agentik.EvAppendText && ev.Text == first {
			return res
		}
	}
}

func TestRealBusyReject(t *testing.T) {
	e := newRealEnv(t, Options{})
	ctx := testCtx(t)
	conv := e.create()
	gate := llmtest.NewGate()
	defer gate.Release()
	e.startPausedTurn(conv, gate, "Hel", "lo")

	req := text("second")
	req.IfBusy = agentik.BusyReject
	_, err := conv.Send(ctx, req)
	if agentik.ErrorCode(err) != agentik.EBusy {
		t.Fatalf("send while busy with reject: %v", err)
	}
	status, body := e.raw("POST", "/agentik/conversations/"+conv.ID()+"/messages", "application/json",
		`{"content":[{"type":"text","text":"third"}],"if_busy":"reject"}`)
	if status != http.StatusConflict || errorCode(t, body) != agentik.EBusy {
		t.Fatalf("raw busy: %d %s", status, body)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("rejected messages were stored: %+v, %v", page, err)
	}
	if info, _ := conv.Info(ctx); !info.Working {
		t.Fatalf("info while a turn runs: %+v", info)
	}

	// Interrupting the running turn answers {interrupted:true}; the stream
	// shows the turn closed as interrupted.
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := conv.Interrupt(ctx); err != nil || !ok {
		t.Fatalf("interrupt: %v, %v", ok, err)
	}
	evs := untilEnd(t, st)
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("turn ended with %+v", end)
	}
}

// TestRealLiveJoin: a subscriber that connects mid-turn first gets working,
// then the partial text so far as one append_text, then the rest live.
func TestRealLiveJoin(t *testing.T) {
	e := newRealEnv(t, Options{})
	conv := e.create()
	gate := llmtest.NewGate()
	defer gate.Release()
	res := e.startPausedTurn(conv, gate, "Hello, wor", "ld")

	s := e.openSSE("/agentik/conversations/" + conv.ID() + "/events")
	first := s.next()
	if first.event != agentik.EvWorking || first.id != "" || first.ev.ReplyTo != res.MessageID {
		t.Fatalf("first event %+v", first)
	}
	var partial sseEv
	for partial.event != agentik.EvAppendText {
		partial = s.next()
		if partial.id != "" {
			t.Fatalf("durable event %+v before the partial text", partial)
		}
	}
	if partial.ev.Text != "Hello, wor" {
		t.Fatalf("partial text %q", partial.ev.Text)
	}
	gate.Release()
	var got strings.Builder
	got.WriteString(partial.ev.Text)
	for {
		ev := s.next()
		if ev.event == agentik.EvAppendText {
			got.WriteString(ev.ev.Text)
		}
		if ev.event == agentik.EvAssistantMessage {
			if ev.id == "" || agentik.JoinText(ev.ev.Message.Content) != "Hello, world" {
				t.Fatalf("assistant message %+v", ev)
			}
		}
		if ev.event == agentik.EvEnd {
			break
		}
	}
	if got.String() != "Hello, world" {
		t.Fatalf("streamed text %q", got.String())
	}
}

// TestRealSSEResume: full replay with after=0, then resumption with
// Last-Event-ID and with ?after= from the middle, each delivering exactly the
// durable events after the cursor — compared with the journal and its cursor
// from the messages endpoint — and then live events.
func TestRealSSEResume(t *testing.T) {
	e := newRealEnv(t, Options{})
	ctx := testCtx(t)
	conv := e.create()
	e.llm.Enqueue(llmtest.Text("one"), llmtest.Text("two"))
	e.turn(conv, "first")
	e.turn(conv, "second")
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 4 {
		t.Fatalf("journal %+v", page.Messages)
	}

	path := "/agentik/conversations/" + conv.ID() + "/events"
	full := readDurable(t, e.openSSE(path+"?after=0"), page.Cursor)
	if len(full) != len(page.Messages) {
		t.Fatalf("%d durable events for %d journal messages", len(full), len(page.Messages))
	}
	for i, ev := range full {
		if ev.ev.Message == nil || ev.ev.Message.ID != page.Messages[i].ID {
			t.Fatalf("event %d %+v does not carry journal message %s", i, ev, page.Messages[i].ID)
		}
		if i > 0 && ev.ev.Cursor <= full[i-1].ev.Cursor {
			t.Fatalf("cursors not increasing: %d after %d", ev.ev.Cursor, full[i-1].ev.Cursor)
		}
	}

	mid := full[1].id
	resumes := map[string]*rawSSE{
		"Last-Event-ID":              e.openSSE(path, "Last-Event-ID", mid),
		"Last-Event-ID over ?after=": e.openSSE(path+"?after=0", "Last-Event-ID", mid),
		"?after=":                    e.openSSE(path + "?after=" + mid),
	}
	for name, s := range resumes {
		got := readDurable(t, s, page.Cursor)
		if len(got) != len(full)-2 || got[0].id != full[2].id || got[len(got)-1].id != full[len(full)-1].id {
			t.Fatalf("%s: resumed with %v, want the events after %s of %v", name, ids(got), mid, ids(full))
		}
	}

	// Each resumed stream is live now: the next turn arrives on all of them,
	// once.
	e.llm.Enqueue(llmtest.Text("three"))
	e.turn(conv, "third")
	for name, s := range resumes {
		ev := s.next()
		for ev.id == "" {
			ev = s.next()
		}
		if ev.ev.Cursor <= page.Cursor || ev.event != agentik.EvUserMessage || ev.ev.Message.Content[0].Text != "third" {
			t.Fatalf("%s: first live event %+v", name, ev)
		}
	}
}

// readDurable reads durable events up to and including cursor last.
func readDurable(t *testing.T, s *rawSSE, last int64) []sseEv {
	t.Helper()
	var out []sseEv
	for {
		ev := s.next()
		if ev.id == "" {
			continue
		}
		if ev.id != strconv.FormatInt(ev.ev.Cursor, 10) {
			t.Fatalf("SSE id %s, JSON cursor %d", ev.id, ev.ev.Cursor)
		}
		out = append(out, ev)
		if ev.ev.Cursor >= last {
			return out
		}
	}
}

func ids(evs []sseEv) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.id)
	}
	return out
}

// TestRealClientReconnect: the Go client's stream survives its connection
// being dropped, delivering every durable event once — checked against a
// full replay of what the store holds. The reconnect is held back until a
// whole turn has run, so the events of that turn can only come from the
// replay after Last-Event-ID.
func TestRealClientReconnect(t *testing.T) {
	e := newRealEnv(t, Options{})
	ctx := testCtx(t)
	hold := &holdResumes{release: make(chan struct{}), seen: make(chan string, 10)}
	client := NewClient(e.base, WithHTTPClient(&http.Client{Transport: hold}), WithReconnect(time.Millisecond, 10*time.Millisecond, 5))
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := client.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	e.llm.Enqueue(llmtest.Text("one"), llmtest.Text("two"))
	if _, err := conv.Send(ctx, text("first")); err != nil {
		t.Fatal(err)
	}
	got := durable(untilEnd(t, st))

	hold.drop() // drops the stream's connection
	var resumedFrom string
	select {
	case resumedFrom = <-hold.seen:
	case <-ctx.Done():
		t.Fatal("the client did not try to reconnect")
	}
	if want := strconv.FormatInt(got[len(got)-1].Cursor, 10); resumedFrom != want {
		t.Fatalf("reconnected with Last-Event-ID %q, want %s", resumedFrom, want)
	}
	e.turn(conv, "second") // runs entirely while the stream is disconnected
	close(hold.release)
	// The replay carries the durable events only: no end this time.
	for {
		ev := recv(t, st)
		if ev.Cursor == 0 {
			continue
		}
		got = append(got, ev)
		if ev.Type == agentik.EvAssistantMessage {
			break
		}
	}

	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := readDurable(t, e.openSSE("/agentik/conversations/"+conv.ID()+"/events?after=0"), page.Cursor)
	if len(got) != len(want) {
		t.Fatalf("client got cursors %v, store has %v", cursors(got), ids(want))
	}
	for i := range want {
		if strconv.FormatInt(got[i].Cursor, 10) != want[i].id {
			t.Fatalf("client got cursors %v, store has %v", cursors(got), ids(want))
		}
	}

	// Deleting the conversation ends the stream with not_found.
	if err := client.DeleteConversation(ctx, conv.ID()); err != nil {
		t.Fatal(err)
	}
	for range st.C() {
	}
	if !agentik.IsNotFound(st.Err()) {
		t.Fatalf("stream of a deleted conversation ended with %v", st.Err())
	}
}

// holdResumes is a transport that reports every request carrying
// Last-Event-ID and holds it until release is closed. drop closes the
// connections it has dialled: the server serves an event stream off its
// request (handOff), where httptest's CloseClientConnections no longer
// reaches it.
type holdResumes struct {
	release chan struct{}
	seen    chan string

	once  sync.Once
	t     *http.Transport
	mu    sync.Mutex
	conns []net.Conn
}

func (h *holdResumes) transport() *http.Transport {
	h.once.Do(func() {
		h.t = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				h.mu.Lock()
				h.conns = append(h.conns, c)
				h.mu.Unlock()
			}
			return c, err
		}}
	})
	return h.t
}

func (h *holdResumes) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
	h.conns = nil
}

func (h *holdResumes) RoundTrip(r *http.Request) (*http.Response, error) {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		select {
		case h.seen <- id:
		default:
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return h.transport().RoundTrip(r)
}

func cursors(evs []agentik.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Cursor)
	}
	return out
}

func TestRealSSEHeadersAndKeepAlive(t *testing.T) {
	e := newRealEnv(t, Options{KeepAlive: 10 * time.Millisecond})
	conv := e.create()
	for _, path := range []string{"/agentik/conversations/" + conv.ID() + "/events", "/agentik/events"} {
		s := e.openSSE(path)
		h := s.resp.Header
		if s.resp.StatusCode != 200 || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-store" || h.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("%s: %d %v", path, s.resp.StatusCode, h)
		}
		if b := s.block(); len(b) != 1 || b[0] != ": keep-alive" {
			t.Fatalf("%s: first block %q, want a keep-alive comment", path, b)
		}
	}
}

// TestRealSlowClient: a client that stops reading must not pin its handler.
// The server's socket buffer is shrunk so that a modest answer fills it; the
// blocked write must give up after WriteTimeout and the handler return.
func TestRealSlowClient(t *testing.T) {
	e := newRealEnv(t, Options{})
	conv := e.create()
	returned := make(chan struct{}, 1)
	h := NewHandler(e.eng, Options{WriteTimeout: 50 * time.Millisecond})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/events") {
			returned <- struct{}{}
		}
	}))
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	conn.Write([]byte("GET /agentik/conversations/" + conv.ID() + "/events HTTP/1.1\r\nHost: test\r\n\r\n"))

	// The 200 is written after the subscription exists: read the response
	// head, then never read again.
	head := bufio.NewReader(conn)
	for {
		line, err := head.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	chunks := make([]string, 256)
	for i := range chunks {
		chunks[i] = strings.Repeat("x", 8<<10)
	}
	e.llm.Enqueue(llmtest.Stream().Role().Content(chunks...).Finish("stop").Done())
	// Sent, not followed: a second subscriber reading 2 MiB of deltas on a
	// busy machine may itself be cut off as slow, which is not what this
	// test is about. The handler returning is.
	if _, err := conv.Send(testCtx(t), text("flood me")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-testCtx(t).Done():
		t.Fatal("the handler of a client that does not read never returned")
	}
}

type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestRealAgentEventsResume: the agent-level stream replays with after=0
// and resumes after Last-Event-ID, each durable event carrying its id.
func TestRealAgentEventsResume(t *testing.T) {
	e := newRealEnv(t, Options{})
	e.create()
	b := e.create()
	full := e.openSSE("/agentik/events?after=0")
	first, second := full.next(), full.next()
	if first.event != agentik.AgentEvCreated || first.id == "" {
		t.Fatalf("first agent event %+v", first)
	}
	if second.event != agentik.AgentEvCreated || second.ev.Cursor <= first.ev.Cursor {
		t.Fatalf("second agent event %+v", second)
	}
	resumed := e.openSSE("/agentik/events", "Last-Event-ID", first.id)
	if got := resumed.next(); got.id != second.id {
		t.Fatalf("resumed at %+v, want id %s", got, second.id)
	}
	if err := e.client.DeleteConversation(testCtx(t), b.ID()); err != nil {
		t.Fatal(err)
	}
	if got := resumed.next(); got.event != agentik.AgentEvDeleted || got.ev.ConversationID != b.ID() {
		t.Fatalf("live agent event %+v", got)
	}
}

// An event stream whose subscriber lost deltas (the bus had no room for
// them) still carries the answer's text whole in its append_text events:
// the rest, from the stored message, comes just before assistant_message,
// with no gap and no repeat; the bus's marker never reaches the wire.
func TestRealSSELostDeltasArriveWhole(t *testing.T) {
	e := newRealEnv(t, Options{}, stacktest.LoseDeltas)
	conv := e.create()
	reply, want := stacktest.LossyAnswer(40)
	e.llm.Enqueue(reply)
	s := e.openSSE("/agentik/conversations/" + conv.ID() + "/events")
	if _, err := conv.Send(testCtx(t), text("hi")); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for {
		ev := s.next()
		switch ev.event {
		case agentik.EvAppendText:
			got.WriteString(ev.ev.Text)
		case agentik.EvDeltasLost:
			t.Fatalf("the marker reached the wire: %+v", ev)
		case agentik.EvAssistantMessage:
			if got.String() != want {
				t.Fatalf("streamed text before the message %q\nwant %q", got.String(), want)
			}
		}
		if ev.event == agentik.EvEnd {
			break
		}
	}
	if got.String() != want {
		t.Fatalf("streamed text %q", got.String())
	}
}
