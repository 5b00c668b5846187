package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/sse"
)

// api speaks Agentik's REST+SSE API with raw HTTP: the bench measures the
// server, so its own side does as little as it can (no JSON decoding of
// events, only their names).
type api struct {
	base string // http://127.0.0.1:port
	hc   *http.Client
}

// newHTTPClient allows one connection per conversation and per SSE client:
// the default two idle connections per host would make the bench measure its
// own connection churn.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

func (a *api) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (a *api) health(ctx context.Context) error {
	return a.do(ctx, http.MethodGet, "/health", nil, http.StatusOK, nil)
}

func (a *api) createConversation(ctx context.Context, title string) (string, error) {
	var c struct {
		ID string `json:"id"`
	}
	if err := a.do(ctx, http.MethodPost, "/agentik/conversations", map[string]any{"title": title}, http.StatusCreated, &c); err != nil {
		return "", err
	}
	return c.ID, nil
}

func (a *api) send(ctx context.Context, id, text string) error {
	body := map[string]any{"content": []map[string]string{{"type": "text", "text": text}}}
	return a.do(ctx, http.MethodPost, "/agentik/conversations/"+id+"/messages", body, http.StatusAccepted, nil)
}

// events subscribes to a conversation's events: live only when after < 0,
// else replaying from after. It returns once the server answered 200, which
// it does only after the subscription is registered.
func (a *api) events(ctx context.Context, id string, after int64) (*eventStream, error) {
	url := a.base + "/agentik/conversations/" + id + "/events"
	if after >= 0 {
		url += "?after=" + strconv.FormatInt(after, 10)
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.hc.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET events: status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return &eventStream{Reader: newSSEReader(resp.Body), body: resp.Body, cancel: cancel}, nil
}

// newSSEReader reads an event stream with a 32 KiB read buffer: the bench
// shares the machine with the server, so it reads in few system calls.
func newSSEReader(r io.Reader) *sse.Reader { return sse.NewReader(r, 32<<10, maxSSELine) }

// maxSSELine bounds one line of an event stream. The server's events are
// single-line JSON; a journal message with a large image could be long, but
// the bench sends text only, so anything past this is a broken stream.
const maxSSELine = 4 << 20

// eventStream is one open SSE subscription.
type eventStream struct {
	*sse.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func (s *eventStream) Close() {
	s.cancel()
	s.body.Close()
}

var errTurnFailed = errors.New("turn did not complete")

// waitEnd reads until the turn's end event and counts the append_text deltas
// on the way. A turn that ends otherwise than completed is errTurnFailed.
func (s *eventStream) waitEnd() (deltas int, err error) {
	for {
		ev, err := s.Next()
		if err != nil {
			return deltas, fmt.Errorf("event stream: %w", err)
		}
		switch ev.Type {
		case "append_text":
			deltas++
		case "end":
			if !bytes.Contains(ev.Data, []byte(`"reason":"completed"`)) {
				return deltas, fmt.Errorf("%w: %s", errTurnFailed, ev.Data)
			}
			return deltas, nil
		}
	}
}
