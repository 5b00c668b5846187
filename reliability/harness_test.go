package reliability_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/a2a"
	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/ws"
)

// server is the whole agent in this process: the real engine on a real
// SQLite file, the native API, AG-UI, A2A and WebSocket facades on one real
// listener, and a scripted model behind the real OpenAI adapter.
type server struct {
	t     *testing.T
	llm   *llmtest.Server
	path  string
	stack *stacktest.Stack
	store *sqlite.Store
	bus   *bus.Bus
	eng   *engine.Engine
	http  *httptest.Server
	url   string // base URL, no trailing slash
	opts  serverOptions
	logs  *syncBuffer // engine and facade logs, shown when a test fails
	errs  *syncBuffer // net/http's own log: a handler panic lands here
}

type serverOptions struct {
	path       string        // database file; default a new one in t.TempDir
	llmTimeout time.Duration // default 30s
	retries    int           // model retries; default 2, -1 for none
	maxBody    int64         // default 1 MiB
	// llm is the model, closed by the caller; default a new one closed at
	// cleanup. (llmtest keeps every request, so a test that measures the
	// heap must be able to let go of it.)
	llm *llmtest.Server
	// engine adjusts the engine's options (limits).
	engine func(*engine.Options)
}

func newServer(t *testing.T, o serverOptions) *server {
	t.Helper()
	if o.path == "" {
		o.path = filepath.Join(t.TempDir(), "agentik.db")
	}
	if o.llmTimeout == 0 {
		o.llmTimeout = 30 * time.Second
	}
	if o.retries == 0 {
		o.retries = 2
	}
	if o.maxBody == 0 {
		o.maxBody = 1 << 20
	}
	s := &server{t: t, llm: o.llm, path: o.path, opts: o, logs: &syncBuffer{}, errs: &syncBuffer{}}
	if s.llm == nil {
		s.llm = llmtest.NewServer()
		t.Cleanup(s.llm.Close)
	}
	s.opts.llm = nil
	s.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

// start opens the store and the engine and serves them on a new listener.
func (s *server) start() {
	t := s.t
	t.Helper()
	logger := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stack, err := stacktest.Open(context.Background(), stacktest.Path(s.path), stacktest.LLM(s.llm),
		stacktest.Model(func(o *openai.Options) {
			o.MaxRetries = s.opts.retries
			o.Timeout = s.opts.llmTimeout
		}),
		stacktest.Engine(func(o *engine.Options) {
			o.SystemPrompt = "You are a test agent."
			o.ToolTimeout = 5 * time.Second
			o.Logger = logger
			if s.opts.engine != nil {
				s.opts.engine(o)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	st, eng := stack.Store, stack.Engine
	mux := http.NewServeMux()
	httpapi.MountHealth(mux, st.Ping)
	httpapi.Mount(mux, "/agentik", eng, httpapi.Options{MaxBodyBytes: s.opts.maxBody, Logger: logger})
	agui.Mount(mux, "/agui", eng, agui.Options{MaxBodyBytes: s.opts.maxBody, Logger: logger})
	a2aSrv := a2a.NewServer(eng, a2a.Options{Path: "/a2a", MaxBodyBytes: s.opts.maxBody, Logger: logger})
	mux.Handle("GET "+a2a.CardPath, a2aSrv.CardHandler())
	mux.Handle("/a2a", a2aSrv)
	wsSrv := ws.NewServer(eng, ws.Options{MaxMessageBytes: 64 << 10, Logger: logger})
	mux.Handle("GET /agentik/ws", wsSrv)

	hs := httptest.NewUnstartedServer(mux)
	hs.Config.ErrorLog = log.New(s.errs, "", 0)
	hs.Start()
	s.stack, s.store, s.bus, s.eng, s.http, s.url = stack, st, stack.Bus, eng, hs, hs.URL
	t.Cleanup(func() {
		s.stop()
		if strings.Contains(s.errs.String(), "panic") {
			t.Errorf("a handler panicked:\n%s", s.errs.String())
		}
	})
}

// stop shuts the engine down, ends every connection and closes the store.
// Idempotent.
func (s *server) stop() {
	if s.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.eng.Shutdown(ctx)
	s.http.CloseClientConnections()
	s.http.Close()
	s.stack.Close()
	s.eng = nil
}

// restart stops the server and starts it again on the same database.
func (s *server) restart() {
	s.stop()
	s.start()
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errorCode returns the code of a native {"error":{"code"}} body.
func (r reply) errorCode() string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends one request; body "" sends none. Headers come in name, value
// pairs; a JSON body gets Content-Type application/json unless given.
func do(t testing.TB, method, url string, body []byte, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// plainClient follows no redirect (a refusal must be the answer itself) and
// gives up on an answer that never ends.
var plainClient = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// createConversation makes a conversation through the native API.
func (s *server) createConversation(t testing.TB) string {
	t.Helper()
	r := do(t, "POST", s.url+"/agentik/conversations", []byte(`{"title":"t"}`))
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var c agentik.ConversationInfo
	json.Unmarshal(r.body, &c)
	return c.ID
}

// send posts a text message and returns the stored message; it fails the
// test unless the message is acknowledged with 202.
func (s *server) send(t testing.TB, conv, text string) agentik.SendResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	r := do(t, "POST", s.url+"/agentik/conversations/"+conv+"/messages", body)
	if r.status != http.StatusAccepted {
		t.Fatalf("send %q: %d %s", text, r.status, r.body)
	}
	var res agentik.SendResult
	json.Unmarshal(r.body, &res)
	return res
}

// journal returns a conversation's whole journal and its latest cursor.
func (s *server) journal(t testing.TB, conv string) ([]agentik.Message, int64) {
	t.Helper()
	var all []agentik.Message
	var cursor int64
	after := int64(0)
	for {
		r := do(t, "GET", s.url+"/agentik/conversations/"+conv+"/messages?limit=500&after="+strconv.FormatInt(after, 10), nil)
		if r.status != http.StatusOK {
			t.Fatalf("messages: %d %s", r.status, r.body)
		}
		var page agentik.MessagePage
		json.Unmarshal(r.body, &page)
		all = append(all, page.Messages...)
		if page.Cursor > cursor {
			cursor = page.Cursor
		}
		if !page.HasMore || len(page.Messages) == 0 {
			return all, cursor
		}
		after = page.Messages[len(page.Messages)-1].Seq
	}
}

// sseEvent is one event of an SSE stream.
type sseEvent struct {
	id    string // "" for online events
	event string
	data  string
}

// cursor is the event's durable cursor (0 for online events).
func (e sseEvent) cursor() int64 {
	n, _ := strconv.ParseInt(e.id, 10, 64)
	return n
}

// sseStream reads an SSE response event by event.
type sseStream struct {
	resp *http.Response
	rd   *bufio.Reader
}

// openSSE opens an event stream; the caller closes it.
func openSSE(ctx context.Context, url string, headers ...string) (*sseStream, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := sseClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, &statusError{resp.StatusCode, string(b)}
	}
	return &sseStream{resp: resp, rd: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
}

// sseClient keeps no connection limit per host: the subscriber tests open
// a thousand streams to one address.
var sseClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2000, DisableCompression: true}}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return strconv.Itoa(e.status) + " " + e.body }

// next returns the next event (comments are skipped), or the read error.
func (s *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.event != "" || ev.data != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			ev.event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if ev.data != "" {
				ev.data += "\n"
			}
			ev.data += strings.TrimPrefix(line[5:], " ")
		}
	}
}

func (s *sseStream) close() { s.resp.Body.Close() }

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor reads s until an event satisfies stop (returned with all before
// it) or the deadline passes.
func waitFor(t testing.TB, s *sseStream, d time.Duration, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	type res struct {
		ev  sseEvent
		err error
	}
	var got []sseEvent
	ch := make(chan res, 1)
	deadline := time.After(d)
	for {
		go func() { ev, err := s.next(); ch <- res{ev, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("stream ended (%v) after %v", r.err, eventTypes(got))
			}
			got = append(got, r.ev)
			if stop(r.ev) {
				return got
			}
		case <-deadline:
			s.close()
			<-ch
			t.Fatalf("timed out after %v", eventTypes(got))
		}
	}
}

func eventTypes(evs []sseEvent) string {
	var b []string
	for _, e := range evs {
		b = append(b, e.event)
	}
	return strings.Join(b, ",")
}

// endOf stops at the end event of the turn answering replyTo.
func endOf(replyTo string) func(sseEvent) bool {
	return func(e sseEvent) bool {
		return e.event == agentik.EvEnd && strings.Contains(e.data, `"reply_to":"`+replyTo+`"`)
	}
}

// endReason returns the reason of an end event.
func endReason(e sseEvent) string {
	var v struct{ Reason string }
	json.Unmarshal([]byte(e.data), &v)
	return v.Reason
}
