package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// Client is an agentik.Agent served by a remote Agentik over this package's
// REST+SSE API. It is safe for concurrent use. Errors are *agentik.Error
// values with the code the server answered with; a server that cannot be
// reached is EUnavailable (wrapping the transport error, so errors.Is finds
// context.Canceled and context.DeadlineExceeded).
//
// The principal of a request is the one the server derives from the bearer
// token (WithToken); agentik.WithPrincipal on the context has no effect here.
//
// Event streams (Events on the Client and on its conversations) reconnect
// after a dropped connection, the server ending the response (a slow
// subscriber is cut off that way) or a failed read. The first attempt is made
// after the minimum delay, then the delay doubles up to the maximum; after the
// given number of consecutive failed attempts the stream ends with the last
// error. A 4xx answer (the conversation was deleted: not_found; the token was
// revoked: unauthorized) ends the stream at once with that error. Reconnects
// carry Last-Event-ID = the last durable cursor received, so the consumer sees
// every durable event once: events the server replays again are dropped by
// cursor. Online events are not replayed; if a turn is running at reconnect
// the stream carries working and the partial text so far as one append_text
// again, so a consumer should restart its partial answer on working. A
// stream opened with agentik.LiveOnly that has not yet received a durable
// event has no cursor to resume from and reconnects live only: durable events
// committed while it was disconnected are not replayed.
type Client struct {
	base     string
	hc       *http.Client
	token    string
	minDelay time.Duration
	maxDelay time.Duration
	attempts int
	maxEvent int

	mu   sync.Mutex
	info *agentik.AgentInfo
}

var _ agentik.Agent = (*Client)(nil)

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithToken sends token as the bearer token of every request.
func WithToken(token string) ClientOption { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc for every request. It must not have a Timeout:
// event streams are long-lived; bound calls with their context instead.
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// WithReconnect sets the event streams' reconnect policy: the delay before
// the first attempt, the cap of the doubling delay, and how many consecutive
// failed attempts end the stream (defaults: 100ms, 5s, 10).
func WithReconnect(minDelay, maxDelay time.Duration, attempts int) ClientOption {
	return func(c *Client) {
		c.minDelay, c.maxDelay, c.attempts = minDelay, maxDelay, attempts
	}
}

// NewClient returns a client of the agent at baseURL, which includes the
// mount prefix: "http://localhost:8080/agentik". It does no I/O.
func NewClient(baseURL string, opts ...ClientOption) *Client {
	c := &Client{
		base:     strings.TrimRight(baseURL, "/"),
		hc:       http.DefaultClient,
		minDelay: 100 * time.Millisecond,
		maxDelay: 5 * time.Second,
		attempts: 10,
		maxEvent: 64 << 20,
	}
	for _, o := range opts {
		o(c)
	}
	c.minDelay = max(c.minDelay, time.Millisecond)
	c.maxDelay = max(c.maxDelay, c.minDelay)
	c.attempts = max(c.attempts, 1)
	return c
}

// Info returns the agent's description, fetched once and cached. The Agent
// interface gives Info no context and no error: when the server cannot be
// reached (within 10 s) the result is the zero AgentInfo and the next call
// tries again. Use FetchInfo to see the error.
func (c *Client) Info() agentik.AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info != nil {
		return *c.info
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.FetchInfo(ctx)
	if err != nil {
		return agentik.AgentInfo{}
	}
	c.info = &info
	return info
}

// FetchInfo asks the server for the agent's description (GET {prefix}).
func (c *Client) FetchInfo(ctx context.Context) (agentik.AgentInfo, error) {
	var info agentik.AgentInfo
	err := c.do(ctx, http.MethodGet, "", nil, nil, &info, http.StatusOK)
	return info, err
}

func (c *Client) CreateConversation(ctx context.Context, req agentik.CreateRequest) (agentik.ConversationInfo, error) {
	var info agentik.ConversationInfo
	err := c.do(ctx, http.MethodPost, "/conversations", nil, req, &info, http.StatusCreated)
	return info, err
}

// Conversation checks that the conversation exists (and is the caller's) and
// returns a handle to it.
func (c *Client) Conversation(ctx context.Context, id string) (agentik.Conversation, error) {
	conv := &conversation{c: c, id: id}
	if _, err := conv.Info(ctx); err != nil {
		return nil, err
	}
	return conv, nil
}

func (c *Client) ListConversations(ctx context.Context, req agentik.ListRequest) (agentik.ConversationList, error) {
	q := url.Values{}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Before != "" {
		q.Set("before", req.Before)
	}
	var list agentik.ConversationList
	err := c.do(ctx, http.MethodGet, "/conversations", q, nil, &list, http.StatusOK)
	return list, err
}

func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	p, err := convPath(id)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, nil, nil, nil, http.StatusNoContent)
}

func (c *Client) RenameConversation(ctx context.Context, id, title string) (agentik.ConversationInfo, error) {
	var info agentik.ConversationInfo
	p, err := convPath(id)
	if err != nil {
		return info, err
	}
	err = c.do(ctx, http.MethodPatch, p, nil, renameBody{Title: title}, &info, http.StatusOK)
	return info, err
}

// Events streams agent events; see Client for the reconnect policy.
func (c *Client) Events(ctx context.Context, after int64) (agentik.Stream[agentik.AgentEvent], error) {
	return subscribe(ctx, c, "/events", after, func(e agentik.AgentEvent) int64 { return e.Cursor })
}

type renameBody struct {
	Title string `json:"title"`
}

// convPath is the path of a conversation. Ids are checked here as on the
// server, so that a hostile id cannot reshape the request URL.
func convPath(id string) (string, error) {
	if !agentik.ValidID(id) {
		return "", agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	return "/conversations/" + id, nil
}

// conversation is a handle to a remote conversation. It holds no resources:
// Close is a no-op.
type conversation struct {
	c  *Client
	id string
}

var _ agentik.Conversation = (*conversation)(nil)

func (cv *conversation) ID() string { return cv.id }

func (cv *conversation) Info(ctx context.Context) (agentik.ConversationInfo, error) {
	var info agentik.ConversationInfo
	p, err := convPath(cv.id)
	if err != nil {
		return info, err
	}
	err = cv.c.do(ctx, http.MethodGet, p, nil, nil, &info, http.StatusOK)
	return info, err
}

func (cv *conversation) Send(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	var res agentik.SendResult
	p, err := convPath(cv.id)
	if err != nil {
		return res, err
	}
	err = cv.c.do(ctx, http.MethodPost, p+"/messages", nil, req, &res, http.StatusAccepted)
	return res, err
}

func (cv *conversation) Interrupt(ctx context.Context) (bool, error) {
	var res interruptResult
	p, err := convPath(cv.id)
	if err != nil {
		return false, err
	}
	err = cv.c.do(ctx, http.MethodPost, p+"/interrupt", nil, nil, &res, http.StatusAccepted)
	return res.Interrupted, err
}

func (cv *conversation) Messages(ctx context.Context, req agentik.MessagesRequest) (agentik.MessagePage, error) {
	var page agentik.MessagePage
	p, err := convPath(cv.id)
	if err != nil {
		return page, err
	}
	q := url.Values{}
	setInt := func(name string, v int64) {
		if v != 0 {
			q.Set(name, strconv.FormatInt(v, 10))
		}
	}
	setInt("after", req.After)
	setInt("before", req.Before)
	setInt("offset", int64(req.Offset))
	setInt("limit", int64(req.Limit))
	if req.Branch != "" {
		q.Set("branch", req.Branch)
	}
	err = cv.c.do(ctx, http.MethodGet, p+"/messages", q, nil, &page, http.StatusOK)
	return page, err
}

// Events streams the conversation's events; see Client for the reconnect
// policy.
func (cv *conversation) Events(ctx context.Context, after int64) (agentik.Stream[agentik.Event], error) {
	p, err := convPath(cv.id)
	if err != nil {
		return nil, err
	}
	return subscribe(ctx, cv.c, p+"/events", after, func(e agentik.Event) int64 { return e.Cursor })
}

func (cv *conversation) Rename(ctx context.Context, title string) (agentik.ConversationInfo, error) {
	return cv.c.RenameConversation(ctx, cv.id, title)
}

func (cv *conversation) Close() error { return nil }

var _ agentik.Brancher = (*conversation)(nil)

// Regenerate answers a user message again on a new branch (POST
// …/regenerate).
func (cv *conversation) Regenerate(ctx context.Context, req agentik.RegenerateRequest) (agentik.SendResult, error) {
	var res agentik.SendResult
	p, err := convPath(cv.id)
	if err != nil {
		return res, err
	}
	err = cv.c.do(ctx, http.MethodPost, p+"/regenerate", nil, req, &res, http.StatusAccepted)
	return res, err
}

// SetHead moves the head (PUT …/head).
func (cv *conversation) SetHead(ctx context.Context, seq int64) (agentik.ConversationInfo, error) {
	var info agentik.ConversationInfo
	p, err := convPath(cv.id)
	if err != nil {
		return info, err
	}
	err = cv.c.do(ctx, http.MethodPut, p+"/head", nil, struct {
		Seq int64 `json:"seq"`
	}{seq}, &info, http.StatusOK)
	return info, err
}

// Fork copies a path into a new conversation (POST …/fork).
func (cv *conversation) Fork(ctx context.Context, req agentik.ForkRequest) (agentik.ConversationInfo, error) {
	var info agentik.ConversationInfo
	p, err := convPath(cv.id)
	if err != nil {
		return info, err
	}
	err = cv.c.do(ctx, http.MethodPost, p+"/fork", nil, req, &info, http.StatusCreated)
	return info, err
}

// ErrUnsupported is returned (wrapped) by the conversations of a Client for
// what the REST API has no endpoint for: interrupting one turn by its user
// message (InterruptTurn; Interrupt cuts the running turn) and reading one
// message by id (Message; Messages pages the journal by seq). Its code is
// EInvalid: the request is well formed, but this client cannot carry it.
var ErrUnsupported = agentik.Errorf(agentik.EInvalid, "not supported over the HTTP API")

// InterruptTurn is not supported over the HTTP API: it returns
// ErrUnsupported and interrupts nothing.
func (cv *conversation) InterruptTurn(ctx context.Context, replyTo string) (bool, error) {
	return false, fmt.Errorf("interrupt the turn of %s: %w", replyTo, ErrUnsupported)
}

// Message is not supported over the HTTP API: it returns ErrUnsupported.
func (cv *conversation) Message(ctx context.Context, id string) (agentik.Message, error) {
	return agentik.Message{}, fmt.Errorf("read message %s: %w", id, ErrUnsupported)
}

// do sends one JSON request and decodes the answer into out (when non-nil)
// if the status is want, or into an *agentik.Error otherwise.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any, want int) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return agentik.WrapError(agentik.EInvalid, "cannot encode request", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotent(method, path) {
		// Go's client sends again, on another connection, a request
		// that met a kept-alive connection the server had just closed
		// (EOF or reset, nothing answered) only when it is marked
		// idempotent; a nil value is not sent.
		req.Header["Idempotency-Key"] = nil
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return agentik.WrapError(agentik.EUnavailable, "cannot reach the agent", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return responseError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return agentik.WrapError(agentik.EUnavailable, "cannot read the agent's answer", err)
	}
	return nil
}

// idempotent reports whether sending the request twice does what sending
// it once does: DELETE and PUT (HTTP's rule), and a conversation's rename
// (PATCH of its title), not a state PATCH.
func idempotent(method, path string) bool {
	switch method {
	case http.MethodDelete, http.MethodPut:
		return true
	case http.MethodPatch:
		return strings.HasPrefix(path, "/conversations/") && !strings.Contains(strings.TrimPrefix(path, "/conversations/"), "/")
	}
	return false
}

func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, agentik.WrapError(agentik.EInvalid, "bad agent URL", err)
	}
	if len(q) > 0 {
		req.URL.RawQuery = q.Encode()
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// responseError turns an error response into an *agentik.Error, keeping the
// server's code and message.
func responseError(resp *http.Response) error {
	var body errorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &body) != nil || body.Error.Code == "" {
		return agentik.Errorf(codeOf(resp.StatusCode), "%s", http.StatusText(resp.StatusCode))
	}
	return &agentik.Error{Code: body.Error.Code, Message: body.Error.Message}
}

// SharedState reads the conversation's shared state (GET …/state).
func (cv *conversation) SharedState(ctx context.Context) (agentik.RawJSON, error) {
	return cv.state(ctx, http.MethodGet, nil)
}

// PutSharedState replaces the shared state (PUT …/state).
func (cv *conversation) PutSharedState(ctx context.Context, state agentik.RawJSON) (agentik.RawJSON, error) {
	if !json.Valid(state) {
		return nil, agentik.Errorf(agentik.EInvalid, "the state is not JSON")
	}
	return cv.state(ctx, http.MethodPut, state)
}

// PatchSharedState applies an RFC 6902 patch to the shared state (PATCH
// …/state).
func (cv *conversation) PatchSharedState(ctx context.Context, patch agentik.RawJSON) (agentik.RawJSON, error) {
	if !json.Valid(patch) {
		return nil, agentik.Errorf(agentik.EInvalid, "the patch is not JSON")
	}
	return cv.state(ctx, http.MethodPatch, patch)
}

func (cv *conversation) state(ctx context.Context, method string, body agentik.RawJSON) (agentik.RawJSON, error) {
	p, err := convPath(cv.id)
	if err != nil {
		return nil, err
	}
	var out agentik.RawJSON
	var in any
	if body != nil {
		in = body
	}
	err = cv.c.do(ctx, method, p+"/state", nil, in, &out, http.StatusOK)
	return out, err
}
