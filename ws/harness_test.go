package ws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

// stack is the real thing: the engine over a SQLite file and the in-process
// bus, the OpenAI adapter talking to a scripted llmtest server, the ws
// Server on a real listener.
type stack struct {
	t    *testing.T
	llm  *llmtest.Server
	eng  *engine.Engine
	srv  *Server
	http *httptest.Server
	url  string // ws://…/agentik/ws
}

// tokens maps bearer tokens to principals when the stack has auth; eopts
// adjust the engine's options (tools, approval policy).
func newStack(t *testing.T, opts Options, tokens map[string]string, eopts ...func(*engine.Options)) *stack {
	t.Helper()
	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		for _, f := range eopts {
			f(o)
		}
	}))
	eng := st.Engine
	var gate *edge.Edge
	if tokens != nil {
		gate = edge.New(edge.Options{Tokens: tokenMap(tokens)})
	} else {
		gate = edge.New(edge.Options{})
	}
	srv := NewServer(eng, opts)
	mux := http.NewServeMux()
	mux.Handle("GET /agentik/ws", gate.Guard(srv, edge.Route{Access: edge.Stream}))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		eng.Shutdown(ctx) // before the listener closes; the stack's cleanup finds it done
		hs.Close()
	})
	return &stack{t: t, llm: st.LLM, eng: eng, srv: srv, http: hs,
		url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/agentik/ws"}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (s *stack) dial(opts *DialOptions) *Conn {
	s.t.Helper()
	c, err := Dial(testCtx(s.t), s.url, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next message, failing the test after a timeout.
func next(t *testing.T, c *Conn) ServerMessage {
	t.Helper()
	select {
	case m, ok := <-c.Messages():
		if !ok {
			t.Fatalf("connection ended: %v", c.Err())
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	return nil
}

// answer collects TEXT_CHUNKs up to END; other messages are returned too.
func answer(t *testing.T, c *Conn) (text string, end *End, others []ServerMessage) {
	t.Helper()
	var b strings.Builder
	for {
		switch m := next(t, c).(type) {
		case *TextChunk:
			b.WriteString(m.Text)
		case *End:
			return b.String(), m, others
		default:
			others = append(others, m)
		}
	}
}

// wantError reads the next message and checks it is ERROR with code.
func wantError(t *testing.T, c *Conn, code string) *Error {
	t.Helper()
	m := next(t, c)
	e, ok := m.(*Error)
	if !ok || e.Code != code || e.Details == "" {
		t.Fatalf("want ERROR %s, got %#v", code, m)
	}
	return e
}

// journal returns the conversation's stored messages.
func (s *stack) journal(id string, principal string) []agentik.Message {
	s.t.Helper()
	return stacktest.Journal(s.t, s.eng, id, principal)
}

func (s *stack) sessions() int {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	return len(s.srv.sessions)
}

// waitIdle waits until the conversation reports no running turn.
func (s *stack) waitIdle(id, principal string) {
	s.t.Helper()
	ctx := agentik.WithPrincipal(testCtx(s.t), principal)
	conv, err := s.eng.Conversation(ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	waitFor(s.t, func() bool {
		info, err := conv.Info(ctx)
		return err == nil && !info.Working
	})
}

// tokenMap is an edge.Tokens of token → principal.
type tokenMap map[string]string

func (m tokenMap) Lookup(token string) (string, bool)             { p, ok := m[token]; return p, ok }
func (tokenMap) Allows(string, string) bool                       { return true }
func (tokenMap) Watch(string, string, string, func()) func() bool { return func() bool { return true } }
