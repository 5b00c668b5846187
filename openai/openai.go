// Package openai implements agentik.LLM for any OpenAI-compatible Chat
// Completions endpoint: OpenAI, Ollama, vLLM, llama.cpp server, LM Studio,
// OpenRouter, DeepSeek.
//
// Its main guarantee: a response counts only when the model finished it.
// openai-go (github.com/openai/openai-go/v3) provides the HTTP transport,
// retries with Retry-After and typed HTTP errors, but the
// stream is folded by this package's own accumulator over the raw chunk JSON,
// because providers differ in ways openai-go's accumulator does not survive:
//
//   - tool calls are keyed by index, or by a new non-empty id when the index
//     is absent (old Ollama, Gemini proxies); missing ids become call_<index>;
//   - reasoning is read from both reasoning_content (DeepSeek, llama.cpp) and
//     reasoning (vLLM, Ollama, OpenRouter);
//   - a stream without a finish_reason, with {"error":…} inside a 200, with a
//     malformed chunk or cut mid-way is a failed call (openai-go reports a
//     silently closed stream as success);
//   - the usage chunk may carry "choices": [] or null;
//   - tool calls are returned whenever any accumulated, whatever the
//     finish_reason says (OpenAI itself says "stop" for a named tool choice),
//     but a "length" finish with truncated arguments is an error.
//
// Failures before anything was streamed (408, 409, 429 except
// insufficient_quota, 5xx, connection errors) are retried; after the first
// delta never, since the caller has already shown it.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/httpx"
	"github.com/agentik/agentik/internal/workers"
)

// Max-tokens field names.
const (
	MaxCompletionTokens = "max_completion_tokens" // OpenAI (required by o-series)
	MaxTokens           = "max_tokens"            // Ollama, older servers
)

// DefaultBaseURL is used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configure an LLM. Nothing is read from the environment: the
// caller (cmd/agentik) owns configuration.
type Options struct {
	BaseURL string // e.g. http://localhost:11434/v1; default DefaultBaseURL
	APIKey  string // empty: no Authorization header is sent
	Model   string // required

	// MaxRetries is how often a failed call is retried before anything was
	// streamed. 0 means the default 2; negative disables retries.
	MaxRetries int

	// Timeout bounds how long a call waits without receiving anything:
	// connecting, retries and their Retry-After waits, the time to the first
	// chunk, and every gap between chunks. A stream that keeps producing is
	// never cut. Default 120s.
	Timeout time.Duration

	ContextTokens int  // reported by Info
	ImageInput    bool // the model takes images; otherwise images are sent as a text note

	MaxTokens      int    // output limit per call; 0 sends none
	MaxTokensField string // MaxCompletionTokens (default) or MaxTokens

	// SendReasoning sends an assistant message's reasoning back as
	// reasoning_content (DeepSeek thinking mode requires it on tool turns).
	SendReasoning bool

	// Identify reads the response's id and model from the stream into
	// ModelResponse.ID and Model (for traces; it costs a decode of the
	// first chunk and two strings per call, so it is off unless asked).
	Identify bool

	HTTPClient *http.Client      // default: a client without overall timeout
	Headers    map[string]string // extra request headers (OpenRouter X-Title, …)
}

// LLM is an agentik.LLM over an OpenAI-compatible endpoint. Safe for
// concurrent use.
type LLM struct {
	opts Options
	// api sends the chat requests: openai-go's client without its
	// environment defaults (see New), used through Post so the body the
	// adapter wrote goes out as it is.
	api oai.Client
	// early runs the calls StartEarly sends, on goroutines whose stacks
	// have already grown through openai-go and net/http.
	early *workers.Pool
	// drained, when set (by tests), learns how each drain handed off by
	// stream ended: nil when the body was read to its end.
	drained func(error)
}

var _ agentik.LLM = (*LLM)(nil)

// New returns an LLM for the endpoint in o.
func New(o Options) (*LLM, error) {
	if o.Model == "" {
		return nil, errors.New("openai: model is required")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", o.BaseURL)
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 2
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	switch o.MaxTokensField {
	case "":
		o.MaxTokensField = MaxCompletionTokens
	case MaxCompletionTokens, MaxTokens:
	default:
		return nil, fmt.Errorf("openai: max tokens field %q is not %s or %s", o.MaxTokensField, MaxCompletionTokens, MaxTokens)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: NewTransport()}
	}
	// A Client holding only these options, unlike openai.NewClient, reads no
	// OPENAI_* environment variables: a key meant for one provider can never
	// leak to another endpoint, and an empty APIKey really sends no
	// Authorization.
	opts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(o.MaxRetries),
		option.WithMiddleware(inMemoryBody, errorMiddleware),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &LLM{opts: o, api: oai.Client{Options: opts}, early: workers.New(workers.Idle)}, nil
}

// NewTransport is the transport of the default client: net/http's default
// settings with an idle pool sized for concurrent turns
// (httpx.PooledTransport), and a write buffer that holds a request of
// requestBuffer bytes with its headers, so that it leaves in one write.
// net/http's 4 KiB buffer sent a request past it in two writes or more (the
// headers and the start of the body, then the rest), and a chat request
// carries the conversation: a few turns exceed 4 KiB.
func NewTransport() *http.Transport {
	t := httpx.PooledTransport()
	t.WriteBufferSize = requestBuffer
	return t
}

// inMemoryBody hands net/http the request body as the reader of bytes it is
// (req.GetBody's). openai-go wraps it in a reader net/http does not know,
// and net/http then flushes the headers before it copies the body: every
// request took two writes.
func inMemoryBody(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		if b, err := req.GetBody(); err == nil {
			req.Body.Close()
			req.Body = b
		}
	}
	return next(req)
}

// requestBuffer is the write buffer of a model connection: 32 KiB holds
// some dozens of turns' history, and costs 32 KiB per open connection
// (8 MiB if all httpx.IdleConns are open).
const requestBuffer = 32 << 10

// Info describes the configured model.
func (l *LLM) Info() agentik.ModelInfo {
	return agentik.ModelInfo{Name: l.opts.Model, ContextTokens: l.opts.ContextTokens, ImageInput: l.opts.ImageInput}
}

// Generate streams one model call. See agentik.LLM for the contract; errors
// are *APIError for answers of the endpoint, wrap ErrIncomplete for a cut
// stream, ctx.Err() when ctx ended, and context.DeadlineExceeded when the
// endpoint stayed silent for Options.Timeout.
func (l *LLM) Generate(ctx context.Context, req agentik.ModelRequest, onDelta func(agentik.ModelDelta)) (agentik.ModelResponse, error) {
	body, err := l.body(req)
	if err != nil {
		return agentik.ModelResponse{}, fmt.Errorf("openai: build request: %w", err)
	}
	return l.generate(ctx, body, nil, onDelta)
}

// generate is Generate of an encoded request; its first attempt is the
// early call first when there is one.
func (l *LLM) generate(ctx context.Context, body []byte, first *early, onDelta func(agentik.ModelDelta)) (agentik.ModelResponse, error) {
	for attempt := 0; ; attempt++ {
		var resp agentik.ModelResponse
		var started bool
		var err error
		if attempt == 0 && first != nil {
			resp, started, err = first.finish(ctx, onDelta)
		} else {
			resp, started, err = l.attempt(ctx, body, onDelta)
		}
		if err == nil {
			return resp, nil
		}
		// openai-go retried what failed before the 200; this retries a
		// stream that broke after the 200 but before any delta.
		if started || attempt >= l.opts.MaxRetries || ctx.Err() != nil || !retryableStream(err) {
			return agentik.ModelResponse{}, redact(fmt.Errorf("openai: model %s: %w", l.opts.Model, err), l.opts.APIKey)
		}
		if err := sleep(ctx, time.Duration(250<<attempt)*time.Millisecond); err != nil {
			return agentik.ModelResponse{}, fmt.Errorf("openai: model %s: %w", l.opts.Model, err)
		}
	}
}

// attempt runs one streamed request (with openai-go's own retries inside).
// started reports whether anything reached onDelta or the tool calls.
func (l *LLM) attempt(parent context.Context, body []byte, onDelta func(agentik.ModelDelta)) (resp agentik.ModelResponse, started bool, err error) {
	c := l.newCall(parent)
	defer c.close()
	c.send(l, body)
	return l.stream(parent, c, onDelta)
}

// call is one streamed request: its context, which the watchdog ends after
// Options.Timeout of silence, and the response, once its headers came.
type call struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	watchdog *time.Timer
	raw      *http.Response
	err      error // the request's, before any of the body
	// unlink, when set, stops the turn's context from ending the call
	// (false if it already did); stream then drains the body on a
	// goroutine of its own, which ends the call (draining).
	unlink   func() bool
	draining bool
}

func (l *LLM) newCall(parent context.Context) *call {
	ctx, cancel := context.WithCancelCause(parent)
	// The watchdog is reset by every chunk, so it measures silence, not
	// the length of the answer.
	return &call{ctx: ctx, cancel: cancel, watchdog: time.AfterFunc(l.opts.Timeout, func() { cancel(errIdle) })}
}

// send sends the request and waits for the response's headers.
//
// openai-go sends the request written by body (with its retries and error
// decoding). Post takes the bytes as they are: ChatCompletions.New would
// first marshal its params by reflection, a tenth of a turn's CPU spent on
// a body it then throws away.
func (c *call) send(l *LLM, body []byte) {
	c.err = l.api.Post(c.ctx, "chat/completions", body, &c.raw)
}

// close ends the call, unless stream handed its end to a drain.
func (c *call) close() {
	if !c.draining {
		c.end()
	}
}

func (c *call) end() {
	c.watchdog.Stop()
	c.cancel(nil)
}

// stream reads a sent call's response. The response is read here with its
// SSE framing only, and each chunk is decoded once, by the accumulator —
// openai-go's typed chunk decoding was the adapter's largest cost and
// reads nothing the accumulator needs.
func (l *LLM) stream(parent context.Context, c *call, onDelta func(agentik.ModelDelta)) (resp agentik.ModelResponse, started bool, err error) {
	ctx := c.ctx
	if c.err != nil {
		return resp, false, l.classify(parent, ctx, c.err)
	}
	if c.raw == nil || c.raw.Body == nil {
		return resp, false, fmt.Errorf("request: the endpoint answered without a body")
	}
	body := c.raw.Body
	defer func() {
		if !c.draining {
			body.Close()
		}
	}()
	events := newSSEReader(body)
	defer events.release()
	acc := newAccumulator(onDelta)
	acc.identified = !l.opts.Identify // nothing to read
	done := false
	for {
		data, ok := events.next()
		if !ok {
			break
		}
		c.watchdog.Reset(l.opts.Timeout)
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			done = true
			break
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if err := acc.add(data); err != nil {
			return resp, acc.started, err
		}
	}
	if err := events.error(); err != nil {
		return resp, acc.started, l.classify(parent, ctx, err)
	}
	if ctx.Err() != nil { // a cancelled body read can look like a clean end
		return resp, acc.started, l.classify(parent, ctx, ctx.Err())
	}
	if done {
		wait := min(l.opts.Timeout, drainWait)
		if c.unlink != nil && c.unlink() {
			// The answer is whole: the body is read to its end (for the
			// connection's reuse) off the turn's path, and the call ends
			// there. Waiting for it took a turn two goroutine switches
			// with the transport's reader, and a server that keeps the
			// stream open after [DONE] held the answer back until wait.
			c.draining = true
			l.early.Go(func() {
				err := drain(body, c.watchdog, wait)
				body.Close()
				c.end()
				if l.drained != nil {
					l.drained(err)
				}
			})
		} else {
			// A call that is not an early one has the turn's context as
			// its own, which ends with the turn: it is drained here.
			drain(body, c.watchdog, wait)
		}
	}
	resp, err = acc.result()
	return resp, acc.started, err
}

// drainWait bounds how long a stream is read past [DONE] for its end.
const drainWait = time.Second

// drain reads a stream's body to its end after [DONE], as openai-python
// does: net/http returns a connection to the pool only once the body was
// read to EOF, and the chunked stream's last chunk often arrives just after
// [DONE] — closing the body then had the next call dial (a TLS handshake,
// against a real provider). A server that keeps the stream open is cut off
// after wait (the watchdog cancels the request), the answer kept.
func drain(body io.Reader, watchdog *time.Timer, wait time.Duration) error {
	watchdog.Reset(wait)
	_, err := io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	return err
}

func (l *LLM) classify(parent, ctx context.Context, err error) error {
	if parent.Err() != nil {
		return parent.Err()
	}
	if errors.Is(context.Cause(ctx), errIdle) {
		return fmt.Errorf("no data from the endpoint for %s: %w", l.opts.Timeout, context.DeadlineExceeded)
	}
	var sdkErr *oai.Error
	if errors.As(err, &sdkErr) {
		return fromSDKError(sdkErr)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Errorf("malformed stream chunk: %w", err)
	}
	return fmt.Errorf("request: %w", err)
}

// retryableStream reports whether a stream failure after the 200 is a
// connection problem worth another attempt (as opposed to an answer).
func retryableStream(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	return errors.Is(err, ErrIncomplete) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &netErr) ||
		strings.Contains(err.Error(), "unexpected EOF")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
