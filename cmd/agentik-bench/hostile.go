package main

import (
	"bufio"
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The hostile phase (issue 44) measures what a hostile caller can make the
// real binary do, as it ships: its default settings, with two principals'
// tokens configured. Each part runs on a fresh server so that its memory
// and descriptor figures are its own:
//
//   - slow bodies: clients that send headers announcing a body, four bytes
//     of it, then nothing, on guarded and unguarded routes;
//   - an MCP tools/call whose arguments hold a huge array, alone and four
//     at once;
//   - 2 MiB of message context metadata, and 2 MiB of edited approval
//     arguments;
//   - a flood of IRC connections from one address that never register,
//     and whether another address can still log in.
//
// A server that never answers or never closes is not waited for past the
// plan's window: what the client saw by then is the figure.

// Two principals, as a multi-tenant server has: alice is the caller,
// bob logs in over IRC from another address.
const (
	hostileAliceToken = "hostile-alice-token-0001"
	hostileBobToken   = "hostile-bob-token-0002"
	hostileTokens     = "alice:" + hostileAliceToken + ",bob:" + hostileBobToken
)

// Slow bodies announce slowContentLength bytes and send slowSent.
const (
	slowContentLength = 1000
	slowSent          = `{"a"`
)

// slowRoutes are the routes the slow-body clients are spread over, in turn.
var slowRoutes = []struct{ what, method, path string }{
	{"guarded route, no token", http.MethodPost, "/agentik/conversations"},
	{"health", http.MethodGet, "/health"},
	{"console", http.MethodGet, "/"},
	{"agent card", http.MethodGet, "/.well-known/agent-card.json"},
	{"unknown path", http.MethodPost, "/no/such/path"},
}

// mcpPath is where the binary mounts its MCP server by default.
const mcpPath = "/mcp"

// hostileBytes is the size of the metadata and of the edited arguments:
// twice the default text limit of a message.
const hostileBytes = 2 << 20

func (r *runner) hostile(ctx context.Context) error {
	if r.server.binary == "" {
		note := "hostile: not measured in-process (it reads the server binary's descriptors and memory)"
		r.res.Notes = append(r.res.Notes, note)
		r.logf("%s", note)
		return nil
	}
	h := &Hostile{}
	r.res.Hostile = h
	var err error
	if h.SlowBodies, err = r.slowBodies(ctx); err != nil {
		return fmt.Errorf("slow bodies: %w", err)
	}
	if h.MCPBomb, err = r.mcpBomb(ctx); err != nil {
		return fmt.Errorf("MCP array: %w", err)
	}
	if h.Metadata, h.Approval, err = r.bigContext(ctx); err != nil {
		return fmt.Errorf("metadata and approval arguments: %w", err)
	}
	if h.IRC, err = r.ircFlood(ctx); err != nil {
		return fmt.Errorf("IRC flood: %w", err)
	}
	return nil
}

// startHostile runs a fresh server with the default limits, the two
// principals' tokens and env.
func (r *runner) startHostile(ctx context.Context, env ...string) (*proc, error) {
	db, err := r.newDB(ctx)
	if err != nil {
		return nil, err
	}
	sc := r.server
	sc.defaultLimits = true
	sc.env = append([]string{"AGENTIK_AUTH_TOKENS=" + hostileTokens}, env...)
	if r.pg != nil {
		sc.pgDSN = db
	} else {
		sc.dbPath = db
	}
	t, _, err := startTarget(ctx, sc)
	if err != nil {
		return nil, err
	}
	// waitHealthy's keep-alive connection would count among the server's
	// descriptors.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	return t.(*proc), nil
}

// slowBodies (issue 44.3): SlowClients connections are opened, then each
// sends its request's headers with Content-Length: 1000 and four bytes of
// the body, and waits up to SlowWindow for an answer and for the server to
// close the connection. The server's descriptors are sampled throughout.
func (r *runner) slowBodies(ctx context.Context) (_ *SlowBodies, err error) {
	p, err := r.startHostile(ctx)
	if err != nil {
		return nil, err
	}
	defer stop(p, &err)
	host := strings.TrimPrefix(p.Base(), "http://")
	s := &SlowBodies{Clients: r.plan.SlowClients, ContentLength: slowContentLength, SentBytes: len(slowSent), WindowSeconds: r.plan.SlowWindow.Seconds()}
	if s.FDsIdle, err = settledFDs(ctx, p); err != nil {
		return nil, err
	}
	peak := sampleFDs(p)
	conns := make([]net.Conn, s.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		if conns[i], err = net.DialTimeout("tcp", host, 5*time.Second); err != nil {
			peak.stop()
			return nil, err
		}
	}
	// Every client is connected before any sends: the server holds them
	// all at once (its accept loop may lag the dials by a moment).
	held, err := waitFDsAtLeast(ctx, p, s.FDsIdle+len(conns), 2*time.Second)
	if err != nil {
		peak.stop()
		return nil, err
	}
	got := make([]slowResult, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		rt := slowRoutes[i%len(slowRoutes)]
		wg.Go(func() { got[i] = slowRequest(c, host, rt.method, rt.path, r.plan.SlowWindow) })
	}
	wg.Wait()
	if s.FDsEnd, err = p.FDs(); err != nil {
		peak.stop()
		return nil, err
	}
	s.FDsPeak = max(held, peak.stop())
	for i, c := range conns {
		c.Close()
		conns[i] = nil
	}
	s.FDsAfter, err = waitFDs(ctx, p, s.FDsIdle, 5*time.Second)
	if err != nil {
		return nil, err
	}

	var answers, closes []time.Duration
	for i, rt := range slowRoutes {
		sr := SlowRoute{Route: rt.method + " " + rt.path, What: rt.what, Statuses: map[int]int{}}
		var a, c []time.Duration
		for j := i; j < len(got); j += len(slowRoutes) {
			g := got[j]
			if g.err != nil {
				return nil, fmt.Errorf("%s: %w", sr.Route, g.err)
			}
			sr.Clients++
			if g.answered {
				sr.Answered++
				sr.Statuses[g.status]++
				a = append(a, g.answer)
			}
			if g.closed {
				sr.Closed++
				c = append(c, g.close)
			}
		}
		sr.Answer, sr.Close = dist(a).rounded(), dist(c).rounded()
		answers, closes = append(answers, a...), append(closes, c...)
		s.Answered += sr.Answered
		s.Closed += sr.Closed
		s.Routes = append(s.Routes, sr)
		r.logf("slow body, %-34s %d/%d answered %v (max %.1f ms), %d/%d closed by the server (max %.1f ms)",
			sr.Route+":", sr.Answered, sr.Clients, sr.Statuses, sr.Answer.MaxMs, sr.Closed, sr.Clients, sr.Close.MaxMs)
	}
	s.Answer, s.Close = dist(answers).rounded(), dist(closes).rounded()
	r.logf("slow bodies: %d/%d answered, %d/%d closed by the server within %s; server descriptors idle %d, peak %d, at the end %d, after the clients hung up %d",
		s.Answered, s.Clients, s.Closed, s.Clients, r.plan.SlowWindow, s.FDsIdle, s.FDsPeak, s.FDsEnd, s.FDsAfter)
	return s, nil
}

type slowResult struct {
	answered, closed bool
	status           int
	answer, close    time.Duration // from the last byte sent
	err              error         // the request could not be sent
}

// slowRequest sends the headers and four bytes of the body on c, then
// reads what the server does within window.
func slowRequest(c net.Conn, host, method, path string, window time.Duration) slowResult {
	var res slowResult
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		method, path, host, slowContentLength, slowSent)
	if _, err := io.WriteString(c, req); err != nil {
		res.err = err
		return res
	}
	t0 := time.Now()
	c.SetReadDeadline(t0.Add(window))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err == nil {
		res.answered, res.answer = true, time.Since(t0)
		if f := strings.Fields(line); len(f) >= 2 {
			res.status, _ = strconv.Atoi(f[1])
		}
		_, err = io.Copy(io.Discard, br) // nil at EOF
	}
	if !isTimeout(err) { // EOF or a reset: the server closed the connection
		res.closed, res.close = true, time.Since(t0)
	}
	return res
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fdSampler reads the server's descriptor count every few milliseconds and
// keeps the highest.
type fdSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	max  atomic.Int64
}

func sampleFDs(p *proc) *fdSampler {
	s := &fdSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		for {
			if n, err := p.FDs(); err == nil && int64(n) > s.max.Load() {
				s.max.Store(int64(n))
			}
			select {
			case <-s.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return s
}

// stop ends the sampling and returns the highest count seen.
func (s *fdSampler) stop() int {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return int(s.max.Load())
}

// settledFDs returns the server's descriptor count once it holds still
// (the same on reads 100 ms apart, 3 s at most).
func settledFDs(ctx context.Context, p *proc) (int, error) {
	last, err := p.FDs()
	deadline := time.Now().Add(3 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		var n int
		if n, err = p.FDs(); err == nil && n == last {
			return n, nil
		}
		last = n
	}
	return last, err
}

// waitFDs waits up to timeout for the server's descriptors to fall to
// idle, and returns the count it saw last.
func waitFDs(ctx context.Context, p *proc, idle int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := p.FDs()
		if err != nil || n <= idle || time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitFDsAtLeast waits up to timeout for the server to hold at least n
// descriptors, and returns the count it saw last.
func waitFDsAtLeast(ctx context.Context, p *proc, n int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := p.FDs()
		if err != nil || got >= n || time.Now().After(deadline) {
			return got, err
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return got, err
		}
	}
}

// hostileClient makes one connection per request: none is left open to
// count among the server's descriptors.
func hostileClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
}

// call makes one request as the principal of token and returns the status
// and the body.
func call(ctx context.Context, hc *http.Client, method, url, token string, body []byte, header map[string]string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// errorCode is the code of an error answer: REST's "too_large" or
// JSON-RPC's -32600 (as text), also inside an event stream's data line;
// "" when the body holds none.
func errorCode(b []byte) string {
	try := func(b []byte) string {
		var e struct {
			Error struct {
				Code json.RawMessage `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || len(e.Error.Code) == 0 {
			return ""
		}
		return strings.Trim(string(e.Error.Code), `"`)
	}
	if c := try(b); c != "" {
		return c
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			if c := try(bytes.TrimSpace(d)); c != "" {
				return c
			}
		}
	}
	return ""
}

// mcpBomb (issue 44.2): a tools/call of ask whose arguments hold an array
// of BombElements numbers, at the current MCP revision, authenticated;
// once, then four at once. Peak memory is the process's VmHWM.
func (r *runner) mcpBomb(ctx context.Context) (_ *MCPBomb, err error) {
	p, err := r.startHostile(ctx)
	if err != nil {
		return nil, err
	}
	defer stop(p, &err)
	const version = "2026-07-28"
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version +
		`","io.modelcontextprotocol/clientCapabilities":{}},"name":"ask","arguments":{"message":[` +
		strings.TrimSuffix(strings.Repeat("0,", r.plan.BombElements), ",") + `]}}}`)
	header := map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": "ask"}
	b := &MCPBomb{Path: mcpPath, Elements: r.plan.BombElements, BodyBytes: len(body)}
	hc := hostileClient()
	if err := sleep(ctx, r.plan.Settle); err != nil {
		return nil, err
	}
	if b.RSSBeforeKB, err = p.RSSKB(); err != nil {
		return nil, err
	}
	if b.HWMBeforeKB, err = p.StatusKB("VmHWM"); err != nil {
		return nil, err
	}
	round := func(n int) (BombRound, error) {
		br := BombRound{Requests: n, Statuses: make([]int, n), Codes: make([]string, n)}
		errs := make([]error, n)
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var rb []byte
				br.Statuses[i], rb, errs[i] = call(ctx, hc, http.MethodPost, p.Base()+mcpPath, hostileAliceToken, body, header)
				br.Codes[i] = errorCode(rb)
				if i == 0 {
					br.First = excerpt(rb, 200)
				}
			})
		}
		wg.Wait()
		br.Ms = round3(ms(time.Since(t0)))
		if err := errors.Join(errs...); err != nil {
			return br, err
		}
		var err error
		br.HWMKB, err = p.StatusKB("VmHWM")
		return br, err
	}
	if b.One, err = round(1); err != nil {
		return nil, err
	}
	if b.Four, err = round(4); err != nil {
		return nil, err
	}
	if err := sleep(ctx, r.plan.Settle); err != nil {
		return nil, err
	}
	if b.RSSAfterKB, err = p.RSSKB(); err != nil {
		return nil, err
	}
	r.logf("MCP %d-element array (%d bytes): one %v %v in %.0f ms, four at once %v %v in %.0f ms; RSS %d KiB before, peak (VmHWM) %d → %d → %d KiB, %d KiB after",
		b.Elements, b.BodyBytes, b.One.Statuses, b.One.Codes, b.One.Ms, b.Four.Statuses, b.Four.Codes, b.Four.Ms,
		b.RSSBeforeKB, b.HWMBeforeKB, b.One.HWMKB, b.Four.HWMKB, b.RSSAfterKB)
	return b, nil
}

// excerpt is the start of an answer, on one line.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// bigContext (issue 44.4): a REST message whose context.metadata holds 2 MiB,
// then, with current_time needing approval, an approval whose edited
// arguments hold 2 MiB.
func (r *runner) bigContext(ctx context.Context) (meta, approval *BigPayload, err error) {
	p, err := r.startHostile(ctx, "AGENTIK_TOOL_APPROVAL=current_time=ask")
	if err != nil {
		return nil, nil, err
	}
	defer stop(p, &err)
	hc := hostileClient()
	base := p.Base() + "/agentik/conversations"
	newConv := func() (string, error) {
		st, b, err := call(ctx, hc, http.MethodPost, base, hostileAliceToken, []byte(`{"title":"hostile"}`), nil)
		if err != nil {
			return "", err
		}
		var c struct{ ID string }
		if st != http.StatusCreated || json.Unmarshal(b, &c) != nil || c.ID == "" {
			return "", fmt.Errorf("create a conversation: %d %.200s", st, b)
		}
		return c.ID, nil
	}
	measure := func(do func() (int, []byte, error)) (*BigPayload, error) {
		bp := &BigPayload{Bytes: hostileBytes}
		if err := sleep(ctx, r.plan.Settle); err != nil {
			return nil, err
		}
		var err error
		if bp.RSSBeforeKB, err = p.RSSKB(); err != nil {
			return nil, err
		}
		if bp.HWMBeforeKB, err = p.StatusKB("VmHWM"); err != nil {
			return nil, err
		}
		var b []byte
		if bp.Status, b, err = do(); err != nil {
			return nil, err
		}
		bp.Code = errorCode(b)
		if err := sleep(ctx, r.plan.Settle); err != nil {
			return nil, err
		}
		if bp.HWMAfterKB, err = p.StatusKB("VmHWM"); err != nil {
			return nil, err
		}
		bp.RSSAfterKB, err = p.RSSKB()
		return bp, err
	}

	conv, err := newConv()
	if err != nil {
		return nil, nil, err
	}
	mb, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": promptPlain}},
		"context": map[string]any{"metadata": map[string]string{"note": strings.Repeat("m", hostileBytes)}},
	})
	meta, err = measure(func() (int, []byte, error) {
		return call(ctx, hc, http.MethodPost, base+"/"+conv+"/messages", hostileAliceToken, mb, nil)
	})
	if err != nil {
		return nil, nil, err
	}
	r.logf("message with %d bytes of context.metadata: %d %s; RSS %d → %d KiB, peak %d → %d KiB",
		meta.Bytes, meta.Status, meta.Code, meta.RSSBeforeKB, meta.RSSAfterKB, meta.HWMBeforeKB, meta.HWMAfterKB)

	// A tool call waiting for approval, then approved with 2 MiB of
	// arguments.
	if conv, err = newConv(); err != nil {
		return meta, nil, err
	}
	sb, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": promptTool}}})
	if st, b, err := call(ctx, hc, http.MethodPost, base+"/"+conv+"/messages", hostileAliceToken, sb, nil); err != nil || st != http.StatusAccepted {
		return meta, nil, fmt.Errorf("send: %d %.200s %v", st, b, err)
	}
	callID, err := waitApproval(ctx, hc, base+"/"+conv+"/approvals")
	if err != nil {
		return meta, nil, err
	}
	ab, _ := json.Marshal(map[string]any{"approved": true, "arguments": map[string]string{"timezone": strings.Repeat("z", hostileBytes)}})
	approval, err = measure(func() (int, []byte, error) {
		return call(ctx, hc, http.MethodPost, base+"/"+conv+"/approvals/"+callID, hostileAliceToken, ab, nil)
	})
	if err != nil {
		return meta, nil, err
	}
	if approval.Status != http.StatusOK {
		// Refused: the call still waits; deny it so the turn ends.
		if _, _, err := call(ctx, hc, http.MethodPost, base+"/"+conv+"/approvals/"+callID, hostileAliceToken, []byte(`{"approved":false}`), nil); err != nil {
			return meta, approval, err
		}
	}
	r.logf("approval with %d bytes of edited arguments: %d %s; RSS %d → %d KiB, peak %d → %d KiB",
		approval.Bytes, approval.Status, approval.Code, approval.RSSBeforeKB, approval.RSSAfterKB, approval.HWMBeforeKB, approval.HWMAfterKB)
	return meta, approval, nil
}

// waitApproval polls a conversation's pending approvals until one is there
// and returns its call id.
func waitApproval(ctx context.Context, hc *http.Client, url string) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, b, err := call(ctx, hc, http.MethodGet, url, hostileAliceToken, nil, nil)
		if err != nil {
			return "", err
		}
		var l struct {
			Approvals []struct {
				CallID string `json:"call_id"`
			} `json:"approvals"`
		}
		if st != http.StatusOK || json.Unmarshal(b, &l) != nil {
			return "", fmt.Errorf("approvals: %d %.200s", st, b)
		}
		if len(l.Approvals) > 0 {
			return l.Approvals[0].CallID, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("no tool call waited for approval within 20 s")
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// ircFlood (issue 44, IRC): IRCConnections connections from 127.0.0.1 that
// never register; which of them the server keeps, its descriptors, and
// whether bob can still log in from 127.0.0.2 meanwhile.
func (r *runner) ircFlood(ctx context.Context) (_ *IRCFlood, err error) {
	p, err := r.startHostile(ctx, "AGENTIK_IRC_ADDR=127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer stop(p, &err)
	addr, err := p.listening("irc listening")
	if err != nil {
		return nil, err
	}
	f := &IRCFlood{Connections: r.plan.IRCConnections, From: "127.0.0.1", Reasons: map[string]int{}, Other: "127.0.0.2"}
	if f.FDsIdle, err = settledFDs(ctx, p); err != nil {
		return nil, err
	}
	peak := sampleFDs(p)
	defer peak.stop()
	conns := make([]net.Conn, f.Connections)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	errs := make([]error, len(conns))
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			conns[i], errs[i] = dialFrom(ctx, f.From, addr)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// What each connection got within a second: a refusal (ERROR, or a
	// close without a word) or silence (kept, waiting for registration).
	type fate struct {
		closed bool
		reason string
	}
	fates := make([]fate, len(conns))
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(time.Second))
			b, err := io.ReadAll(c)
			fates[i].closed = !isTimeout(err)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "ERROR") {
					fates[i].reason = strings.TrimSpace(l)
				}
			}
		})
	}
	wg.Wait()
	if f.FDsPeak, err = p.FDs(); err != nil {
		return nil, err
	}
	for _, ft := range fates {
		switch {
		case !ft.closed:
			f.Accepted++
		case ft.reason != "":
			f.Refused++
			f.Reasons[ft.reason]++
		default:
			f.ClosedSilently++
		}
	}
	// bob from another address, while the flood's connections are open.
	f.OtherRegistered, f.OtherReply, err = ircLogin(ctx, f.Other, addr, "bob", "bob:"+hostileBobToken)
	if err != nil {
		return nil, err
	}
	f.FDsPeak = max(f.FDsPeak, peak.stop())
	for i, c := range conns {
		c.Close()
		conns[i] = nil
	}
	if f.FDsAfter, err = waitFDs(ctx, p, f.FDsIdle, 5*time.Second); err != nil {
		return nil, err
	}
	r.logf("IRC: %d unregistered connections from %s: %d kept, %d refused %v, %d closed without a word; descriptors idle %d, peak %d, after %d; bob from %s: registered %v (%s)",
		f.Connections, f.From, f.Accepted, f.Refused, f.Reasons, f.ClosedSilently, f.FDsIdle, f.FDsPeak, f.FDsAfter, f.Other, f.OtherRegistered, f.OtherReply)
	return f, nil
}

func dialFrom(ctx context.Context, from, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return d.DialContext(ctx, "tcp", addr)
}

// ircLogin registers nick from address from with PASS pass and reports
// whether the server welcomed it (001), with the line that decided.
func ircLogin(ctx context.Context, from, addr, nick, pass string) (bool, string, error) {
	c, err := dialFrom(ctx, from, addr)
	if err != nil {
		return false, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "PASS %s\r\nNICK %s\r\nUSER %s 0 * :%s\r\n", pass, nick, nick, nick); err != nil {
		return false, "write: " + err.Error(), nil
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if f := strings.Fields(l); len(f) >= 2 && f[1] == "001" {
			return true, l, nil
		}
		if strings.HasPrefix(l, "ERROR") {
			return false, l, nil
		}
		if f := strings.Fields(l); len(f) >= 2 && len(f[1]) == 3 && f[1][0] >= '4' && f[1][0] <= '5' {
			return false, l, nil // an error numeric (464 wrong password, …)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		return false, "read: " + err.Error(), nil
	}
	return false, "closed without a word", nil
}
