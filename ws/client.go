package ws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik"
)

// DialOptions configures Dial. The zero value creates a new conversation on
// an open server.
type DialOptions struct {
	// Token is sent as "Authorization: Bearer <token>".
	Token string
	// ConversationID attaches to an existing conversation; "" creates one
	// (with Title, and in memory only when Temporal).
	ConversationID string
	Title          string
	Temporal       bool
	// Events asks for extensions: ExtTools, ExtReasoning.
	Events []string
	// HTTPClient performs the handshake; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Header is added to the handshake request.
	Header http.Header
	// MaxMessageBytes bounds each server message read (default 64 MiB).
	MaxMessageBytes int64
}

// ErrGracefulDisconnect is the Err of a Conn the server closed after
// GRACEFUL_DISCONNECT (idle timeout or shutdown): Reconnect to continue.
var ErrGracefulDisconnect = errors.New("ws: the server disconnected gracefully")

// Conn is a client connection to one conversation. Send, Interrupt and Close
// are safe to call concurrently with each other and with reading Messages.
type Conn struct {
	url    string
	opts   DialOptions
	c      *websocket.Conn
	status Status

	msgs   chan ServerMessage
	done   chan struct{}
	cancel context.CancelFunc

	mu      sync.Mutex
	err     error
	closing bool // Close was called: the read error that follows is ours
}

// Dial connects to the endpoint at rawURL ("ws://host:8080/agentik/ws";
// http and https work too) and returns once the server has sent STATUS. A
// refused connection is an *Error: unauthorized (HTTP 401), not_found (no
// such conversation, or not the caller's), invalid (bad options),
// unavailable (the server is shutting down).
func Dial(ctx context.Context, rawURL string, opts *DialOptions) (*Conn, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 << 20
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ws: bad url: %w", err)
	}
	q := u.Query()
	if o.ConversationID != "" {
		q.Set("conversation_id", o.ConversationID)
	} else {
		if o.Title != "" {
			q.Set("title", o.Title)
		}
		if o.Temporal {
			q.Set("temporal", "true")
		}
	}
	if len(o.Events) > 0 {
		q.Set("events", strings.Join(o.Events, ","))
	}
	u.RawQuery = q.Encode()

	h := http.Header{}
	for k, v := range o.Header {
		h[k] = v
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	c, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: o.HTTPClient, HTTPHeader: h})
	if err != nil {
		if resp != nil {
			switch resp.StatusCode {
			case http.StatusUnauthorized:
				return nil, &Error{Code: agentik.EUnauthorized, Details: "missing or invalid credentials"}
			case http.StatusNotFound:
				return nil, &Error{Code: agentik.ENotFound, Details: "no such endpoint (or agent) for this caller"}
			case http.StatusServiceUnavailable:
				return nil, &Error{Code: agentik.EUnavailable, Details: "the server is shutting down"}
			}
		}
		return nil, &Error{Code: agentik.EUnavailable, Details: err.Error()}
	}
	c.SetReadLimit(o.MaxMessageBytes)
	first, err := readMessage(ctx, c)
	if err != nil {
		c.CloseNow()
		return nil, &Error{Code: agentik.EUnavailable, Details: "no STATUS from the server: " + err.Error()}
	}
	switch m := first.(type) {
	case *Status:
		rctx, cancel := context.WithCancel(context.Background())
		cn := &Conn{url: rawURL, opts: o, c: c, status: *m,
			msgs: make(chan ServerMessage, 256), done: make(chan struct{}), cancel: cancel}
		cn.opts.ConversationID = m.ConversationID
		go cn.readLoop(rctx)
		return cn, nil
	case *Error:
		c.Close(websocket.StatusNormalClosure, "")
		return nil, m
	default:
		c.CloseNow()
		return nil, &Error{Code: agentik.EUnavailable, Details: fmt.Sprintf("expected STATUS, got %T", first)}
	}
}

func readMessage(ctx context.Context, c *websocket.Conn) (ServerMessage, error) {
	typ, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errors.New("ws: binary frame from the server")
	}
	return DecodeServerMessage(b)
}

// Status is the STATUS the server sent when the connection became ready.
func (c *Conn) Status() Status { return c.status }

// ConversationID is the conversation this connection is attached to.
func (c *Conn) ConversationID() string { return c.status.ConversationID }

// Messages delivers the server's messages in order. It is closed when the
// connection ends; Err then says why. Read it promptly: while it is full the
// connection is not read, so pings go unanswered and the server drops a
// client that stalls too long.
func (c *Conn) Messages() <-chan ServerMessage { return c.msgs }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended: nil while it is open and after Close,
// ErrGracefulDisconnect after the server's GRACEFUL_DISCONNECT, or the
// transport error.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send sends USER_MESSAGE{text}. A nil error means the frame was written;
// the server answers a refused message with an *Error on Messages.
func (c *Conn) Send(ctx context.Context, text string) error {
	return c.SendMessage(ctx, &UserMessage{Text: text})
}

// SendMessage sends a user message with its options (if_busy).
func (c *Conn) SendMessage(ctx context.Context, m *UserMessage) error {
	return c.write(ctx, m)
}

// Interrupt asks the server to cancel the running turn (extension); its END
// follows on Messages.
func (c *Conn) Interrupt(ctx context.Context) error { return c.write(ctx, &Interrupt{}) }

// Answer answers an *ApprovalRequest with APPROVAL (extension, SPEC §10).
// A refused answer (not_found, conflict, invalid) comes back as an *Error
// on Messages; an accepted one lets the turn go on.
func (c *Conn) Answer(ctx context.Context, m *Approval) error { return c.write(ctx, m) }

func (c *Conn) write(ctx context.Context, m ClientMessage) error {
	b, err := EncodeClientMessage(m)
	if err != nil {
		return err
	}
	if err := c.c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("ws: send: %w", err)
	}
	return nil
}

// Close closes the connection normally and waits for its reader. Idempotent.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.c.Close(websocket.StatusNormalClosure, "")
	c.cancel()
	<-c.done
	return nil
}

func (c *Conn) readLoop(ctx context.Context) {
	defer close(c.done)
	defer close(c.msgs)
	defer c.c.CloseNow()
	var goodbye bool
	for {
		m, err := readMessage(ctx, c.c)
		if err != nil {
			c.mu.Lock()
			switch {
			case goodbye:
				c.err = ErrGracefulDisconnect
			case c.closing:
			default:
				c.err = fmt.Errorf("ws: connection lost: %w", err)
			}
			c.mu.Unlock()
			return
		}
		if _, ok := m.(*GracefulDisconnect); ok {
			goodbye = true
		}
		select {
		case c.msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// Reconnect dials the same endpoint with the same options, attached to this
// connection's conversation, retrying with a doubling delay (100 ms up to
// 5 s) until it succeeds, ctx ends, or the server refuses for good
// (unauthorized, not_found, invalid). Messages stored while disconnected are
// in the conversation's history (REST API); the new connection streams
// from the moment it is ready, including the partial answer of a turn that
// is still running. The old Conn is closed.
func (c *Conn) Reconnect(ctx context.Context) (*Conn, error) {
	c.Close()
	delay := 100 * time.Millisecond
	for {
		nc, err := Dial(ctx, c.url, &c.opts)
		if err == nil {
			return nc, nil
		}
		var we *Error
		if errors.As(err, &we) && we.Code != agentik.EUnavailable {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("ws: reconnect: %w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}
