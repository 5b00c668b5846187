package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// env is one agent served over a real listener, with a Client of it.
type env struct {
	t      *testing.T
	agent  agentik.Agent
	srv    *httptest.Server
	base   string // server URL + prefix
	client *Client
}

func newEnv(t *testing.T, agent agentik.Agent, opts Options) *env {
	t.Helper()
	srv := httptest.NewServer(NewHandler(agent, opts))
	t.Cleanup(func() {
		// Event streams still open would hold Close up.
		srv.CloseClientConnections()
		srv.Close()
	})
	base := srv.URL + DefaultPrefix
	return &env{t: t, agent: agent, srv: srv, base: base,
		client: NewClient(base, WithReconnect(5*time.Millisecond, 50*time.Millisecond, 20))}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// raw sends a request with an explicit content type and returns the status
// and the body.
func (e *env) raw(method, path, contentType, body string, header ...string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(e.t), method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// errorCode decodes an error body, failing the test if it is not one.
func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var body errorBody
	if err := json.Unmarshal(b, &body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("not an error body: %s", b)
	}
	return body.Error.Code
}

// rawSSE is a raw SSE connection read line by line, for tests that look at the
// exact bytes on the wire.
type rawSSE struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

func (e *env) openSSE(path string, header ...string) *rawSSE {
	e.t.Helper()
	ctx, cancel := context.WithCancel(testCtx(e.t))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &rawSSE{t: e.t, resp: resp, r: bufio.NewReader(resp.Body)}
	e.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// block reads one block of lines up to the blank line that ends it.
func (s *rawSSE) block() []string {
	s.t.Helper()
	var lines []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("read SSE after %q: %v", lines, err)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return lines
		}
		lines = append(lines, line)
	}
}

// sseEv is one parsed raw event.
type sseEv struct {
	id, event string
	ev        agentik.Event
}

// next returns the next event, skipping comments.
func (s *rawSSE) next() sseEv {
	s.t.Helper()
	for {
		var out sseEv
		var data string
		for _, l := range s.block() {
			switch {
			case strings.HasPrefix(l, "id: "):
				out.id = l[4:]
			case strings.HasPrefix(l, "event: "):
				out.event = l[7:]
			case strings.HasPrefix(l, "data: "):
				data = l[6:]
			}
		}
		if data == "" {
			continue
		}
		if err := json.Unmarshal([]byte(data), &out.ev); err != nil {
			s.t.Fatalf("event data %q: %v", data, err)
		}
		return out
	}
}

// recv receives one event from a stream or fails after the test context.
func recv[T any](t *testing.T, st agentik.Stream[T]) T {
	t.Helper()
	select {
	case v, ok := <-st.C():
		if !ok {
			t.Fatalf("stream ended: %v", st.Err())
		}
		return v
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
	}
	panic("unreachable")
}
