// Package stacktest builds the real agent stack for the tests of the
// packages above the engine: the engine over its own SQLite file, the
// in-process bus, the OpenAI adapter talking to a scripted llmtest server,
// and a tool registry with current_time. Only the model is replaced, by a
// server that speaks the real OpenAI wire format over real HTTP.
//
// It is an ordinary package so that the tests of several packages can share
// it; only _test.go files import it. A test puts its own front door on
// Stack.Engine.
package stacktest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// ShutdownTimeout bounds the engine's shutdown in Close: running turns are
// interrupted when it passes.
const ShutdownTimeout = 10 * time.Second

// callTimeout bounds the calls New and Journal make: opening the store and
// starting the engine, reading a journal.
const callTimeout = 30 * time.Second

// Stack is one running stack. Its fields are set by New or Open and do not
// change; each is safe for concurrent use as its own package says.
type Stack struct {
	LLM    *llmtest.Server // the scripted model
	Store  *sqlite.Store
	Bus    *bus.Bus
	Engine *engine.Engine
	Path   string // the database file

	ownLLM bool   // LLM was made here and is closed with the stack
	dir    string // a directory made by Open, removed by Close
	once   sync.Once
}

// Option adjusts what New and Open build.
type Option func(*config)

type config struct {
	path   string
	llm    *llmtest.Server
	model  []func(*openai.Options)
	engine []func(*engine.Options)
	lossy  bool
}

// Engine adjusts the engine's options before the engine is made. They start
// as Store, Bus and LLM of the stack and Tools with current_time; the rest
// is left to the engine's defaults.
func Engine(f func(*engine.Options)) Option {
	return func(c *config) { c.engine = append(c.engine, f) }
}

// Model adjusts the OpenAI adapter's options. They start as the llmtest
// server's URL, model "test-model" and no retries (MaxRetries -1).
func Model(f func(*openai.Options)) Option {
	return func(c *config) { c.model = append(c.model, f) }
}

// Path opens the database at path (created if missing) instead of a new
// file, so that a test can stop a stack and start another on the same data.
func Path(path string) Option {
	return func(c *config) { c.path = path }
}

// LLM makes the stack answer with s, which the caller closes, instead of a
// fresh server closed with the stack: a model shared by stacks or kept
// across restarts.
func LLM(s *llmtest.Server) Option {
	return func(c *config) { c.llm = s }
}

// New builds and starts a stack for t; t's cleanup closes it (Close). The
// database is a new file in t.TempDir() unless Path says otherwise. It
// fails t when the stack does not start.
func New(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := Open(ctx, append([]Option{Path(filepath.Join(t.TempDir(), "agentik.db"))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Open builds and starts a stack without a test, for examples and for
// tests that stop and restart it themselves; the caller must Close it.
// Without Path the database is a new file in a new temporary directory,
// removed by Close. On error nothing is left open.
func Open(ctx context.Context, opts ...Option) (_ *Stack, err error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Stack{LLM: c.llm, Path: c.path}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.Path == "" {
		if s.dir, err = os.MkdirTemp("", "stacktest"); err != nil {
			return nil, err
		}
		s.Path = filepath.Join(s.dir, "agentik.db")
	}
	if s.LLM == nil {
		s.LLM, s.ownLLM = llmtest.NewServer(), true
	}
	if s.Store, err = sqlite.Open(ctx, s.Path); err != nil {
		return nil, err
	}
	mo := openai.Options{BaseURL: s.LLM.URL(), Model: "test-model", MaxRetries: -1}
	for _, f := range c.model {
		f(&mo)
	}
	model, err := openai.New(mo)
	if err != nil {
		return nil, err
	}
	s.Bus = bus.New()
	var b agentik.Bus = s.Bus
	if c.lossy {
		s.Bus = bus.NewBuffered(LossyBuffer)
		b = newLossyBus(s.Bus)
	}
	eo := engine.Options{Store: s.Store, Temporal: memstore.New(), Bus: b, LLM: model, Tools: tools.NewRegistry(tools.CurrentTime{})}
	for _, f := range c.engine {
		f(&eo)
	}
	if s.Engine, err = engine.New(eo); err != nil {
		return nil, err
	}
	if err := s.Engine.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close shuts the engine down (within ShutdownTimeout), then closes the
// store and the model server if the stack made them, and removes the
// directory Open made. A test that must shut the engine down earlier (before
// closing its own listener, say) calls Engine.Shutdown itself: it is
// idempotent. Close is idempotent and safe to call from several goroutines.
func (s *Stack) Close() {
	s.once.Do(func() {
		if s.Engine != nil {
			ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			s.Engine.Shutdown(ctx)
			cancel()
		}
		if s.Store != nil {
			s.Store.Close()
		}
		if s.ownLLM {
			s.LLM.Close()
		}
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	})
}

// Journal returns the stored messages of conversation id (up to
// agentik.MaxMessagesLimit) as principal reads them through agent ("": no
// principal). It fails t when they cannot be read.
func Journal(t testing.TB, agent agentik.Agent, id, principal string) []agentik.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(agentik.WithPrincipal(context.Background(), principal), callTimeout)
	defer cancel()
	conv, err := agent.Conversation(ctx, id)
	if err != nil {
		t.Fatalf("conversation %s: %v", id, err)
	}
	defer conv.Close()
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: agentik.MaxMessagesLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Messages
}
