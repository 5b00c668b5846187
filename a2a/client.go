package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/sse"
)

// maxResponseBytes bounds what the client reads from a remote agent: a card,
// a JSON-RPC response, or one SSE event.
const maxResponseBytes = 16 << 20

// Card is what the client keeps of a remote agent card.
type Card struct {
	Name        string
	Description string
	Skills      []Skill
	Streaming   bool
	Endpoint    string  // JSON-RPC URL chosen
	Version     Version // protocol spoken with it
}

type remoteCard struct {
	Name                string          `json:"name"`
	Description         string          `json:"description"`
	URL                 string          `json:"url"`
	PreferredTransport  string          `json:"preferredTransport"`
	ProtocolVersion     string          `json:"protocolVersion"`
	SupportedInterfaces []cardInterface `json:"supportedInterfaces"`
	Capabilities        struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
	Skills []Skill `json:"skills"`
}

// parseCard reads a card of either version and picks the JSON-RPC interface:
// 1.0 when offered, else 0.3.
func parseCard(b []byte) (*Card, error) {
	var rc remoteCard
	if err := json.Unmarshal(b, &rc); err != nil {
		return nil, fmt.Errorf("agent card is not valid JSON: %w", err)
	}
	if rc.Name == "" {
		return nil, errors.New("agent card has no name")
	}
	c := &Card{Name: rc.Name, Description: rc.Description, Skills: rc.Skills, Streaming: rc.Capabilities.Streaming}
	for _, i := range rc.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && strings.HasPrefix(i.ProtocolVersion, "1.") && i.URL != "" {
			c.Endpoint, c.Version = i.URL, V1
			return c, nil
		}
	}
	for _, i := range rc.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && strings.HasPrefix(i.ProtocolVersion, "0.3") && i.URL != "" {
			c.Endpoint, c.Version = i.URL, V03
			return c, nil
		}
	}
	if rc.URL != "" && (rc.PreferredTransport == "" || strings.EqualFold(rc.PreferredTransport, "JSONRPC")) {
		c.Endpoint, c.Version = rc.URL, V03
		return c, nil
	}
	return nil, errors.New("agent card offers no JSON-RPC interface")
}

// Client talks to one remote A2A agent. Safe for concurrent use.
type Client struct {
	card  *Card
	http  *http.Client
	token string
	ids   atomic.Int64
}

// Dial fetches the agent card at baseURL (its /.well-known/agent-card.json,
// or baseURL itself when it names a .json file) and returns a client for it.
// token, when set, is sent as a bearer token on every request.
func Dial(ctx context.Context, baseURL, token string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	u := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(u, ".json") {
		u += CardPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch agent card: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("fetch agent card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch agent card: HTTP %d", resp.StatusCode)
	}
	card, err := parseCard(b)
	if err != nil {
		return nil, err
	}
	return &Client{card: card, http: hc, token: token}, nil
}

// Card returns the remote agent's card.
func (c *Client) Card() *Card { return c.card }

func (c *Client) post(ctx context.Context, op string, params any, accept string) (*http.Response, json.RawMessage, error) {
	id := c.ids.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": clientMethods[c.card.Version][op], "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.card.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("A2A-Version", c.card.Version.String())
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	return resp, json.RawMessage(fmt.Sprint(id)), nil
}

// readResult reads one JSON-RPC response and returns its result.
func readResult(b []byte, id json.RawMessage) (json.RawMessage, error) {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("response is not JSON-RPC: %w", err)
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if r.JSONRPC != "2.0" || !bytes.Equal(bytes.TrimSpace(r.ID), id) {
		return nil, errors.New("response is not a JSON-RPC 2.0 answer to this request")
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return nil, errors.New("response has no result")
	}
	return r.Result, nil
}

func (c *Client) call(ctx context.Context, op string, params any) (json.RawMessage, error) {
	resp, id, err := c.post(ctx, op, params, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var rpc *Error
		if _, err := readResult(b, id); errors.As(err, &rpc) {
			return nil, rpc
		}
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return readResult(b, id)
}

func (c *Client) sendParams(m *Message, blocking bool) any {
	if c.card.Version == V03 {
		return map[string]any{"message": encV03Message(m), "configuration": map[string]any{"blocking": blocking, "acceptedOutputModes": []string{}}}
	}
	return map[string]any{"message": encV1Message(m), "configuration": map[string]any{"returnImmediately": !blocking, "acceptedOutputModes": []string{}}}
}

// Send sends m and waits for the outcome: the final Task, or the Message the
// agent answered with. It streams when the agent supports it, calling
// onEvent (when not nil) for every event as it arrives; otherwise it makes a
// blocking send and polls until the task ends. If ctx ends while a task
// runs, the remote task is canceled (best effort).
func (c *Client) Send(ctx context.Context, m *Message, onEvent func(Event)) (Event, error) {
	var (
		out Event
		err error
		tid string
	)
	if c.card.Streaming {
		out, tid, err = c.stream(ctx, m, onEvent)
	} else {
		out, tid, err = c.blocking(ctx, m)
	}
	if ctx.Err() != nil && tid != "" {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		c.Cancel(cctx, tid)
		cancel()
	}
	return out, err
}

func (c *Client) blocking(ctx context.Context, m *Message) (Event, string, error) {
	raw, err := c.call(ctx, opSend, c.sendParams(m, true))
	if err != nil {
		return nil, "", err
	}
	ev, err := decodeEvent(c.card.Version, raw)
	if err != nil {
		return nil, "", fmt.Errorf("invalid result: %w", err)
	}
	t, ok := ev.(*Task)
	if !ok {
		return ev, "", nil
	}
	for !settled(t.Status.State) {
		select {
		case <-ctx.Done():
			return t, t.ID, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if t, err = c.GetTask(ctx, t.ID); err != nil {
			return nil, t.ID, err
		}
	}
	return t, t.ID, nil
}

// settled: the task ended, or waits for the caller.
func settled(s string) bool {
	return Terminal(s) || s == StateInputRequired || s == StateAuthRequired
}

// GetTask reads a task.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	raw, err := c.call(ctx, opGet, map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	return decodeTask(c.card.Version, raw)
}

// Cancel cancels a task.
func (c *Client) Cancel(ctx context.Context, id string) (*Task, error) {
	raw, err := c.call(ctx, opCancel, map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	return decodeTask(c.card.Version, raw)
}

// What follows a stream's final event is read before the body is closed,
// so its connection can be reused: net/http reuses a connection only when
// its response body was read to the end before it was closed, and a stream
// closed right after its final event usually was not. A2A servers end the
// stream right after that event; one that does not is cut off after
// drainTime or drainBytes.
const (
	drainBytes = 64 << 10
	drainTime  = 500 * time.Millisecond
)

// closeStream reads what is left of a stream's body, within those bounds,
// and closes it. Reading it to the end puts the connection back in the
// client's pool before this returns.
func closeStream(body io.ReadCloser) {
	t := time.AfterFunc(drainTime, func() { body.Close() })
	defer t.Stop()
	io.Copy(io.Discard, io.LimitReader(body, drainBytes)) //nolint:errcheck // what is left is not needed
	body.Close()
}

// stream runs a streaming send and folds its events into the final task.
func (c *Client) stream(ctx context.Context, m *Message, onEvent func(Event)) (Event, string, error) {
	resp, id, err := c.post(ctx, opStream, c.sendParams(m, true), "text/event-stream")
	if err != nil {
		return nil, "", err
	}
	defer closeStream(resp.Body)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if _, err := readResult(b, id); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("HTTP %d without an event stream", resp.StatusCode)
	}
	var task *Task
	var arts artifactText
	defer func() { // the task returned holds the text streamed into it
		if task != nil {
			arts.flush(task.Artifacts)
		}
	}()
	events := sse.NewReader(resp.Body, 64<<10, maxResponseBytes)
	tid := func() string {
		if task != nil {
			return task.ID
		}
		return ""
	}
	for {
		sev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return task, tid(), err
		}
		if len(sev.Data) == 0 {
			continue
		}
		raw, err := readResult(sev.Data, id) // copies what it keeps of the data
		if err != nil {
			return task, tid(), err
		}
		ev, err := decodeEvent(c.card.Version, raw)
		if err != nil {
			return task, tid(), fmt.Errorf("invalid event: %w", err)
		}
		if onEvent != nil {
			onEvent(ev)
		}
		switch e := ev.(type) {
		case *Message:
			return e, tid(), nil
		case *Task:
			task = e
			arts.reset()
			if settled(e.Status.State) && len(e.Artifacts) > 0 {
				return task, tid(), nil
			}
		case *StatusUpdate:
			if task == nil {
				task = &Task{ID: e.TaskID, ContextID: e.ContextID}
			}
			task.Status = e.Status
			if e.Final || settled(e.Status.State) {
				return task, tid(), nil
			}
		case *ArtifactUpdate:
			if task == nil {
				task = &Task{ID: e.TaskID, ContextID: e.ContextID}
			}
			task.Artifacts = arts.merge(task.Artifacts, e)
		}
	}
	if task != nil && task.ID != "" && ctx.Err() == nil {
		// The stream ended without a final status: ask for the outcome.
		t, err := c.GetTask(ctx, task.ID)
		return t, task.ID, err
	}
	return task, tid(), errors.New("the event stream ended without a result")
}

// artifactText applies a stream's artifact updates: append to the artifact
// with the same id, or add/replace it. Consecutive text chunks appended to
// an artifact are joined into one part. The text of an artifact's last part
// is gathered in a builder while chunks arrive, and written into the part
// when a part of another kind follows or by flush: joining with += copied
// the whole text at every chunk.
type artifactText struct {
	tail map[string]*strings.Builder // by artifact id
}

func (a *artifactText) reset() { a.tail = nil }

func (a *artifactText) merge(as []Artifact, u *ArtifactUpdate) []Artifact {
	id := u.Artifact.ID
	for i := range as {
		if as[i].ID == id {
			if u.Append {
				as[i].Parts = a.appendParts(id, as[i].Parts, u.Artifact.Parts)
			} else {
				delete(a.tail, id)
				as[i] = u.Artifact
			}
			return as
		}
	}
	delete(a.tail, id)
	return append(as, u.Artifact)
}

// appendParts appends streamed parts to ps, the parts of artifact id.
func (a *artifactText) appendParts(id string, ps, more []Part) []Part {
	b := a.tail[id]
	for _, p := range more {
		if n := len(ps); n > 0 && p.Kind == "text" && ps[n-1].Kind == "text" {
			if b == nil {
				b = &strings.Builder{}
				b.WriteString(ps[n-1].Text)
				if a.tail == nil {
					a.tail = map[string]*strings.Builder{}
				}
				a.tail[id] = b
			}
			b.WriteString(p.Text)
			continue
		}
		if b != nil {
			ps[len(ps)-1].Text = b.String()
			delete(a.tail, id)
			b = nil
		}
		ps = append(ps, p)
	}
	return ps
}

// flush writes the text gathered so far into the artifacts' last parts:
// into the first artifact of each id, the one merge appends to.
func (a *artifactText) flush(as []Artifact) {
	done := map[string]bool{}
	for i := range as {
		id := as[i].ID
		if b := a.tail[id]; b != nil && !done[id] && len(as[i].Parts) > 0 {
			as[i].Parts[len(as[i].Parts)-1].Text = b.String()
		}
		done[id] = true
	}
}
