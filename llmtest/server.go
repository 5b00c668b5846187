// Package llmtest is a scripted OpenAI-compatible Chat Completions server
// for tests and benchmarks. It listens on 127.0.0.1 over real HTTP and
// speaks the real wire format (SSE chunks exactly shaped like OpenAI's, error
// bodies, Retry-After headers), so the code under test runs its production
// HTTP client, retries and stream parser unchanged.
//
// Replies are scripted FIFO with Enqueue; when the script is empty a handler
// answers (by default a short fixed text), so benchmarks and soak tests can
// run indefinitely. Every request is recorded for assertions. Steps such as
// Pause (with a Gate), Hang and Reset let tests reproduce interrupts,
// timeouts and broken connections deterministically, without sleeps.
package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultText is what the default handler answers.
const DefaultText = "This is a scripted answer from llmtest."

// Server is a running scripted endpoint. Safe for concurrent use.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	closed   chan struct{}
	handlers sync.WaitGroup
	closeMu  sync.Once

	mu       sync.Mutex
	queue    []Reply
	handle   func(Request) Reply
	requests []Request
	seq      int
	lean     bool // see Lean

	emb embeddings // POST /v1/embeddings (embeddings.go)
}

// NewServer starts a server on a random 127.0.0.1 port. It panics if it
// cannot listen, like httptest.NewServer: a test cannot go on without it.
func NewServer() *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("llmtest: listen: " + err.Error())
	}
	s := &Server{ln: ln, closed: make(chan struct{})}
	s.handle = func(Request) Reply { return Text(DefaultText) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("POST /v1/embeddings", s.serveEmbeddings)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return s
}

// URL returns the base URL, ending in "/v1" (what OPENAI_BASE_URL expects).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server: paused and hanging replies are cut off (the client
// sees a broken stream, not a clean end), connections close,
// and Close returns once every handler has returned. Idempotent.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		close(s.closed)
		s.srv.Close()
		s.handlers.Wait()
	})
}

// Enqueue appends replies to the script; each request takes the next one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// Handle sets the function that answers when the script is empty. It is
// called concurrently for concurrent requests.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	s.handle = f
	s.mu.Unlock()
}

// Lean makes the server cheap to run under load, for a benchmark's model
// that shares the machine with what it measures: it keeps no requests
// (Requests returns none), and a request's Messages hold only its last user
// message and the messages after it, the rest being skipped, not decoded
// (they stay in Raw). A request with no user message has them all.
func (s *Server) Lean() {
	s.mu.Lock()
	s.lean = true
	s.mu.Unlock()
}

// decodeLean decodes a request as Lean says.
func decodeLean(raw []byte, req *Request) error {
	var top struct {
		Request
		Messages []json.RawMessage `json:"messages"` // shadows Request's
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	*req = top.Request
	if top.Messages == nil {
		req.Messages = nil // absent or null, as the full decode leaves it
		return nil
	}
	from := 0
	for i := len(top.Messages) - 1; i >= 0; i-- {
		var m struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(top.Messages[i], &m); err != nil {
			return err
		}
		if m.Role == "user" {
			from = i
			break
		}
	}
	req.Messages = make([]Message, len(top.Messages)-from)
	for i, m := range top.Messages[from:] {
		if err := json.Unmarshal(m, &req.Messages[i]); err != nil {
			return err
		}
	}
	return nil
}

// Pending returns how many scripted replies have not been used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns a copy of every chat request received so far, in order of
// arrival (including ones answered with an error).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Request is a decoded chat completion request. Fields the server does not
// model are still in Raw.
type Request struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens           *int           `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	Seed                *int64         `json:"seed,omitempty"`

	Raw    []byte      `json:"-"` // the body as received
	Header http.Header `json:"-"`
	N      int         `json:"-"` // 1 for the first request the server saw, 2 …
	Remote string      `json:"-"` // the client's address: one per connection
}

// StreamOptions is the stream_options request field.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one request message. Content stays raw because it is a string
// or an array of parts; use Text and Parts to read it. Content is nil when
// the key was absent and "null" when it was null.
type Message struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content,omitempty"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Reasoning        string          `json:"reasoning,omitempty"`
}

// Part is one content part of a message.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image_url of an image part (usually a data: URI).
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ToolCall is an assistant tool call sent back in a request.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is one offered tool.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// IsString reports whether the content was sent as a JSON string.
func (m Message) IsString() bool {
	return len(m.Content) > 0 && m.Content[0] == '"'
}

// Parts returns the content as parts; string content is one text part.
func (m Message) Parts() []Part {
	if m.IsString() {
		var s string
		_ = json.Unmarshal(m.Content, &s)
		return []Part{{Type: "text", Text: s}}
	}
	var ps []Part
	_ = json.Unmarshal(m.Content, &ps)
	return ps
}

// Text returns the concatenated text of the content.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts() {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// LastUserText returns the text of the last user message, for handlers that
// answer depending on the question.
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// ToolNames returns the names of the offered tools.
func (r Request) ToolNames() []string {
	var n []string
	for _, t := range r.Tools {
		n = append(n, t.Function.Name)
	}
	return n
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[{"id":"llmtest","object":"model","created":0,"owned_by":"llmtest"}]}`)
}

func (s *Server) serveChat(w http.ResponseWriter, hr *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()

	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	lean := s.lean
	s.mu.Unlock()
	var req Request
	if lean {
		err = decodeLean(raw, &req)
	} else {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": "llmtest: invalid JSON body: " + err.Error(), "type": "invalid_request_error", "param": nil, "code": nil,
		}})
		w.Write(b)
		return
	}
	req.Raw, req.Header, req.Remote = raw, hr.Header.Clone(), hr.RemoteAddr

	s.mu.Lock()
	s.seq++
	req.N = s.seq
	if !lean {
		s.requests = append(s.requests, req)
	}
	var reply Reply
	if len(s.queue) > 0 {
		reply = s.queue[0]
		s.queue = s.queue[1:]
	} else {
		h := s.handle
		s.mu.Unlock()
		reply = h(req)
		s.mu.Lock()
	}
	s.mu.Unlock()

	p := &player{s: s, w: w, hr: hr, reply: reply, req: req}
	p.play()
}

// player plays one Reply onto one response.
type player struct {
	s     *Server
	w     http.ResponseWriter
	hr    *http.Request
	reply Reply
	req   Request
}

func (p *player) play() {
	r := p.reply
	for k, vs := range r.Headers {
		for _, v := range vs {
			p.w.Header().Add(k, v)
		}
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		p.w.WriteHeader(r.Status)
		io.WriteString(p.w, r.Body)
		return
	}
	if !p.req.Stream {
		p.playJSON()
		return
	}
	h := p.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	p.w.WriteHeader(http.StatusOK)
	p.flush()

	if !p.wait(r.FirstTokenDelay) {
		return
	}
	model := orDefault(r.Model, p.req.Model)
	id := fmt.Sprintf("chatcmpl-llmtest-%d", p.req.N)
	created := time.Now().Unix()
	for i, st := range r.Steps {
		if i > 0 && !p.wait(r.ChunkDelay) {
			return
		}
		switch st.Kind {
		case StepDelta, StepFinish, StepUsage:
			c := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
			switch st.Kind {
			case StepDelta:
				c.Choices = []choice{{Delta: st.Delta}}
			case StepFinish:
				reason := st.Text
				c.Choices = []choice{{FinishReason: &reason}}
			case StepUsage:
				u := st.Usage
				c.Usage = &u
				if !st.Null {
					c.Choices = []choice{}
				}
			}
			b, _ := json.Marshal(c)
			p.event(b)
		case StepDone:
			p.event([]byte("[DONE]"))
		case StepData:
			p.event([]byte(st.Text))
		case StepRaw:
			io.WriteString(p.w, st.Text)
			p.flush()
		case StepReset:
			p.reset()
			return
		case StepPause:
			if st.Gate != nil {
				st.Gate.reach()
				select {
				case <-st.Gate.released:
				case <-p.hr.Context().Done():
					st.Gate.abandon()
					return
				case <-p.s.closed:
					p.abort()
				}
			}
		case StepHang:
			select {
			case <-p.hr.Context().Done():
			case <-p.s.closed:
				p.abort()
			}
			return
		case StepSleep:
			if !p.wait(st.Duration) {
				return
			}
		}
	}
}

// playJSON answers a non-streaming request by folding the content steps of
// the reply into one chat.completion object.
func (p *player) playJSON() {
	var text, reasoning strings.Builder
	var calls []map[string]any
	byIndex := map[int]map[string]any{}
	var finish any
	var usage *Usage
	for _, st := range p.reply.Steps {
		switch st.Kind {
		case StepDelta:
			d := st.Delta
			if d.Content != nil {
				text.WriteString(*d.Content)
			}
			if d.ReasoningContent != nil {
				reasoning.WriteString(*d.ReasoningContent)
			}
			if d.Reasoning != nil {
				reasoning.WriteString(*d.Reasoning)
			}
			for _, tc := range d.ToolCalls {
				var c map[string]any
				if tc.Index != nil {
					c = byIndex[*tc.Index]
				}
				if c == nil {
					c = map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": ""}}
					calls = append(calls, c)
					if tc.Index != nil {
						byIndex[*tc.Index] = c
					}
				}
				f := c["function"].(map[string]any)
				f["arguments"] = f["arguments"].(string) + tc.Function.Arguments
			}
		case StepFinish:
			finish = st.Text
		case StepUsage:
			u := st.Usage
			usage = &u
		case StepReset:
			p.reset()
			return
		case StepHang, StepPause:
			select {
			case <-p.hr.Context().Done():
				if st.Gate != nil {
					st.Gate.abandon()
				}
				return
			case <-p.s.closed:
				p.abort()
			case <-gateReleased(st.Gate):
			}
		}
	}
	msg := map[string]any{"role": "assistant", "content": text.String()}
	if reasoning.Len() > 0 {
		msg["reasoning_content"] = reasoning.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	b, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-llmtest-%d", p.req.N), "object": "chat.completion",
		"created": time.Now().Unix(), "model": orDefault(p.reply.Model, p.req.Model),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage,
	})
	p.w.Header().Set("Content-Type", "application/json")
	p.w.Write(b)
}

func gateReleased(g *Gate) <-chan struct{} {
	if g == nil {
		return nil // Hang: never released
	}
	g.reach()
	return g.released
}

func (p *player) event(data []byte) {
	var b bytes.Buffer
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	p.w.Write(b.Bytes())
	p.flush()
}

func (p *player) flush() {
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

// wait waits d, or returns false early when the client or the server goes.
func (p *player) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.hr.Context().Done():
		return false
	case <-p.s.closed:
		p.abort()
		return false
	}
}

// abort ends the response without the terminating chunk, so a client reading
// a stream cut by Close sees an error rather than a clean (truncated) end.
func (p *player) abort() {
	panic(http.ErrAbortHandler)
}

// reset cuts the connection without finishing the response. SetLinger(0)
// makes the close a TCP RST, the harshest realistic failure.
func (p *player) reset() {
	p.flush()
	conn, _, err := http.NewResponseController(p.w).Hijack()
	if err != nil {
		panic(errors.Join(errors.New("llmtest: cannot hijack connection for Reset"), err))
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"` // nil encodes as null (vLLM usage chunk)
	Usage   *Usage   `json:"usage"`   // null on every chunk but the usage one
}

type choice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
