package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/sse"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fiveWords is the answer of every plain model call of the door tests.
const fiveWords = "one two three four five"

// askOrFive answers a user message starting "ask" with a call of
// current_time (which the processes' policy asks a person about), anything
// else (and the call's result) with fiveWords in five deltas.
func askOrFive(r llmtest.Request) llmtest.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "user" && strings.HasPrefix(last.Text(), "ask") {
		return llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("c1"))
	}
	return llmtest.Stream().Role().Content("one ").Content("two ").Content("three ").Content("four ").Content("five").Finish("stop").Done()
}

// doorToken is what a front door showed of one event, in the terms of the
// events it stands for: a door shows some of them in its own way (IRC's
// typing tags, a WebSocket's TEXT_CHUNK), and some not at all.
type doorToken struct {
	kind string // an event type, or "answer" (IRC: a line of the answer)
	text string // append_text's delta, the answer's line
	// reset: text replaces what came before (an A2A artifact chunk
	// without append).
	reset bool
}

// doorReader reads one conversation's stream through a front door; next
// fails once the stream is closed or broken (close may be called from any
// goroutine, to end a wait).
type doorReader struct {
	next  func() (doorToken, error)
	close func()
}

// crossDoor is a front door that streams, with what it must show of a plain
// turn, and of a turn that waits for an approval before and after the
// approval is given. Every set holds end (or, before the approval, the
// door's approval request): what proves the online events of a turn run by
// another process reached this one.
type crossDoor struct {
	name                    string
	open                    func(ctx context.Context, p *proc, id string) (*doorReader, error)
	plain, asking, approved []string
	text                    bool // the deltas (or the answer's lines) make fiveWords
}

// TestPostgresEveryDoorStreamsTurnsRunElsewhere is issue 53's lost end, door
// by door, through the real binary: three processes on one database;
// conversations created and streamed through each front door that streams
// on one process, at once, their messages posted to the two others, and a
// tool call's approval given through a third. Every stream must show each
// turn whole — the online events that travel between processes (working,
// append_text, awaiting_approval, end) in the door's own form — within 20 s.
func TestPostgresEveryDoorStreamsTurnsRunElsewhere(t *testing.T) {
	const convs = 12
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(askOrFive)
	const token = "tok-alice-1"
	env := append([]string{"AGENTIK_AUTH_TOKENS=alice:" + token, "AGENTIK_IRC_ADDR=127.0.0.1:0", "AGENTIK_TOOL_APPROVAL=current_time=ask"}, unlimited...)
	ps, _ := pgProcs(t, llm, 3, env...)
	var cs []*httpapi.Client
	for _, p := range ps {
		cs = append(cs, httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(token)))
	}
	doors := []crossDoor{
		{name: "sse", open: sseDoor(token),
			plain:    []string{agentik.EvUserMessage, agentik.EvWorking, agentik.EvAppendText, agentik.EvAssistantMessage, agentik.EvEnd},
			asking:   []string{agentik.EvUserMessage, agentik.EvWorking, agentik.EvApprovalRequested, agentik.EvAwaitingApproval},
			approved: []string{agentik.EvApprovalResolved, agentik.EvAppendText, agentik.EvAssistantMessage, agentik.EvEnd},
			text:     true},
		{name: "websocket", open: wsDoor(token),
			plain:    []string{agentik.EvAppendText, agentik.EvEnd},
			asking:   []string{agentik.EvApprovalRequested},
			approved: []string{agentik.EvAppendText, agentik.EvEnd},
			text:     true},
		{name: "irc", open: ircDoor(t, token),
			plain:    []string{agentik.EvWorking, "answer", agentik.EvEnd},
			asking:   []string{agentik.EvWorking, agentik.EvApprovalRequested},
			approved: []string{agentik.EvApprovalResolved, "answer", agentik.EvEnd},
			text:     true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range doors {
		for i := range convs {
			wg.Go(func() { crossDoorConversation(ctx, t, d, ps, cs, i) })
		}
	}
	wg.Wait()
}

// crossDoorConversation creates a conversation on process home, streams it
// there through door d, posts a plain message to the next process and one
// whose call waits for approval to the one after, and approves the call
// through the next again.
func crossDoorConversation(ctx context.Context, t *testing.T, d crossDoor, ps []*proc, cs []*httpapi.Client, i int) {
	home, next, third := i%len(ps), (i+1)%len(ps), (i+2)%len(ps)
	info, err := cs[home].CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Error(err)
		return
	}
	r, err := d.open(ctx, ps[home], info.ID)
	if err != nil {
		t.Errorf("%s: open %s: %v", d.name, info.ID, err)
		return
	}
	defer r.close()
	where := fmt.Sprintf("%s %s (streamed on process %d)", d.name, info.ID, home)
	post := func(c *httpapi.Client, text string) bool {
		conv, _ := c.Conversation(ctx, info.ID)
		_, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
		if err != nil {
			t.Errorf("%s: send: %v", where, err)
		}
		return err == nil
	}
	if !post(cs[next], "hello") || !awaitDoor(t, r, where+", plain turn posted to "+fmt.Sprint(next), d.plain, d.text) {
		return
	}
	if !post(cs[third], "ask the time") || !awaitDoor(t, r, where+", asking turn posted to "+fmt.Sprint(third), d.asking, false) {
		return
	}
	conv, _ := cs[next].Conversation(ctx, info.ID)
	if err := conv.Resolve(ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
		t.Errorf("%s: approve: %v", where, err)
		return
	}
	awaitDoor(t, r, where+", approved through "+fmt.Sprint(next), d.approved, d.text)
}

// awaitDoor reads r until it has shown every kind of want, failing after 20
// s, on an end before that, or (text) when the deltas or lines read do not
// make fiveWords.
func awaitDoor(t *testing.T, r *doorReader, where string, want []string, text bool) bool {
	timer := time.AfterFunc(20*time.Second, r.close)
	defer timer.Stop()
	var seen []string
	var got strings.Builder
	for {
		missing := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return slices.Contains(seen, k) })
		if len(missing) == 0 {
			break
		}
		tok, err := r.next()
		if err != nil {
			t.Errorf("%s: missing %v within 20s (%v); saw %v", where, missing, err, seen)
			return false
		}
		if tok.kind == agentik.EvEnd && !slices.Contains(want, agentik.EvEnd) {
			t.Errorf("%s: end before %v; saw %v", where, missing, seen)
			return false
		}
		seen = append(seen, tok.kind)
		if tok.reset {
			got.Reset()
		}
		got.WriteString(tok.text)
	}
	if text && got.String() != fiveWords {
		t.Errorf("%s: text %q, want %q; saw %v", where, got.String(), fiveWords, seen)
		return false
	}
	return true
}

// sseDoor streams a conversation's events raw (the native API's SSE).
func sseDoor(token string) func(ctx context.Context, p *proc, id string) (*doorReader, error) {
	return func(ctx context.Context, p *proc, id string) (*doorReader, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/agentik/conversations/"+id+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("status %d", resp.StatusCode)
		}
		sr := sse.NewReader(resp.Body, 4096, 1<<20)
		next := func() (doorToken, error) {
			ev, err := sr.Next()
			if err != nil {
				return doorToken{}, err
			}
			tok := doorToken{kind: ev.Type}
			if ev.Type == agentik.EvAppendText {
				var d struct{ Text string }
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					return doorToken{}, err
				}
				tok.text = d.Text
			}
			return tok, nil
		}
		return &doorReader{next: next, close: func() { resp.Body.Close() }}, nil
	}
}

// wsDoor attaches a WebSocket (the Go SDK) to the conversation.
func wsDoor(token string) func(ctx context.Context, p *proc, id string) (*doorReader, error) {
	return func(ctx context.Context, p *proc, id string) (*doorReader, error) {
		c, err := ws.Dial(ctx, wsURL(p), &ws.DialOptions{Token: token, ConversationID: id})
		if err != nil {
			return nil, err
		}
		next := func() (doorToken, error) {
			for m := range c.Messages() {
				switch m := m.(type) {
				case *ws.TextChunk:
					return doorToken{kind: agentik.EvAppendText, text: m.Text}, nil
				case *ws.ApprovalRequest:
					return doorToken{kind: agentik.EvApprovalRequested}, nil
				case *ws.End:
					if m.Reason != "completed" {
						return doorToken{}, fmt.Errorf("END %s", m.Reason)
					}
					return doorToken{kind: agentik.EvEnd}, nil
				case *ws.Error:
					return doorToken{}, m
				}
			}
			return doorToken{}, fmt.Errorf("closed: %v", c.Err())
		}
		return &doorReader{next: next, close: func() { c.Close() }}, nil
	}
}

// ircDoor logs in over IRC with message-tags (for the typing tags) and
// joins the conversation's channel. Lines: +typing=active is working,
// +typing=done end, the approval NOTICE and its outcome the approval's
// events, the agent's plain PRIVMSGs the answer.
func ircDoor(t *testing.T, token string) func(ctx context.Context, p *proc, id string) (*doorReader, error) {
	var nicks atomic.Int32
	return func(ctx context.Context, p *proc, id string) (*doorReader, error) {
		nc, err := net.Dial("tcp", ircAddr(t, p))
		if err != nil {
			return nil, err
		}
		rd := ircreader.NewIRCReader(nc)
		line := func() (ircmsg.Message, error) {
			b, err := rd.ReadLine()
			if err != nil {
				return ircmsg.Message{}, err
			}
			return ircmsg.ParseLine(string(b))
		}
		until := func(cmd string) error {
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			defer nc.SetReadDeadline(time.Time{})
			for {
				m, err := line()
				if err != nil {
					return err
				}
				if m.Command == cmd {
					return nil
				}
			}
		}
		// One nick per connection: a nick in use is refused.
		fmt.Fprintf(nc, "CAP REQ :message-tags\r\nPASS %s\r\nNICK alice%d\r\nUSER alice 0 * :Alice\r\nCAP END\r\n", token, nicks.Add(1))
		if err := until("376"); err != nil {
			nc.Close()
			return nil, fmt.Errorf("registration: %v", err)
		}
		fmt.Fprintf(nc, "JOIN #%s\r\n", id)
		if err := until("366"); err != nil {
			nc.Close()
			return nil, fmt.Errorf("join: %v", err)
		}
		next := func() (doorToken, error) {
			for {
				m, err := line()
				if err != nil {
					return doorToken{}, err
				}
				if tok, ok := ircToken(m); ok {
					return tok, nil
				}
			}
		}
		return &doorReader{next: next, close: func() { nc.Close() }}, nil
	}
}

// ircToken is what an IRC line from the agent stands for, if anything.
func ircToken(m ircmsg.Message) (doorToken, bool) {
	if m.Nick() != "agentik" {
		return doorToken{}, false
	}
	text := ""
	if len(m.Params) == 2 {
		text = m.Params[1]
	}
	switch {
	case m.Command == "TAGMSG":
		switch _, v := m.GetTag("+typing"); v {
		case "active":
			return doorToken{kind: agentik.EvWorking}, true
		case "done":
			return doorToken{kind: agentik.EvEnd}, true
		}
	case m.Command == "NOTICE" && strings.HasPrefix(text, "Approval needed:"):
		return doorToken{kind: agentik.EvApprovalRequested}, true
	case m.Command == "NOTICE" && strings.Contains(text, " approved by "):
		return doorToken{kind: agentik.EvApprovalResolved}, true
	case m.Command == "PRIVMSG" && !strings.HasPrefix(text, "\x01"):
		return doorToken{kind: "answer", text: text}, true
	}
	return doorToken{}, false
}

// askingDoor is a front door whose client sends a message and streams the
// turn that answers it (a run, a streamed message, a tool call): ask sends
// text to conversation id through process p and reads that turn. The turn
// must show want (as crossDoor's sets), its text making fiveWords.
type askingDoor struct {
	name string
	ask  func(ctx context.Context, p *proc, id, text string) *doorReader
	want []string
	text bool
}

// TestPostgresDoorRunsAnsweredElsewhere: for the doors whose client sends a
// message and streams its answer on the same request (AG-UI, A2A, MCP),
// the turn is run by another process than the one the client talks to,
// which then has only the online events it hears to stream. Each
// conversation is made busy through the native API on the next process
// (a turn the model holds), the door's message is sent to the home process
// (queued behind it), and the model lets go once that message is stored:
// the holder answers both, and the door's stream must show its own turn
// whole (text and end) within 20 s — 12 conversations per door at once.
func TestPostgresDoorRunsAnsweredElsewhere(t *testing.T) {
	const convs = 12
	llm := llmtest.NewServer()
	defer llm.Close()
	var mu sync.Mutex
	gates := map[string]chan struct{}{}
	gate := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[name] == nil {
			gates[name] = make(chan struct{})
		}
		return gates[name]
	}
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if text := r.LastUserText(); strings.HasPrefix(text, "hold ") {
			select {
			case <-gate(text):
			case <-time.After(time.Minute): // a failed test must not hang its server
			}
		}
		return askOrFive(r)
	})
	const token = "tok-alice-1"
	ps, _ := pgProcs(t, llm, 3, append([]string{"AGENTIK_AUTH_TOKENS=alice:" + token}, unlimited...)...)
	var cs []*httpapi.Client
	for _, p := range ps {
		cs = append(cs, httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(token)))
	}
	doors := []askingDoor{
		{name: "agui", ask: aguiDoor(token), want: []string{agentik.EvAppendText, agentik.EvEnd}, text: true},
		{name: "a2a", ask: a2aDoor(token), want: []string{agentik.EvWorking, agentik.EvAppendText, agentik.EvEnd}, text: true},
		{name: "mcp", ask: mcpDoor(token), want: []string{agentik.EvAppendText, agentik.EvEnd}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range doors {
		for i := range convs {
			wg.Go(func() {
				home, holder, watch := i%len(ps), (i+1)%len(ps), (i+2)%len(ps)
				info, err := cs[home].CreateConversation(ctx, agentik.CreateRequest{})
				if err != nil {
					t.Error(err)
					return
				}
				where := fmt.Sprintf("%s %s (sent to process %d, held by %d)", d.name, info.ID, home, holder)
				w, err := sseDoor(token)(ctx, ps[watch], info.ID)
				if err != nil {
					t.Errorf("%s: watch: %v", where, err)
					return
				}
				defer w.close()
				hold := fmt.Sprint("hold ", info.ID)
				conv, _ := cs[holder].Conversation(ctx, info.ID)
				if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(hold)}}); err != nil {
					t.Errorf("%s: send: %v", where, err)
					return
				}
				// The holder runs the held turn before the door's message is
				// sent; the model lets go once that message is stored.
				if !awaitDoor(t, w, where+": held turn", []string{agentik.EvUserMessage, agentik.EvWorking}, false) {
					return
				}
				r := d.ask(ctx, ps[home], info.ID, "hello")
				defer r.close()
				if !awaitDoor(t, w, where+": door's message", []string{agentik.EvUserMessage}, false) {
					return
				}
				close(gate(hold))
				awaitDoor(t, r, where, d.want, d.text)
			})
		}
	}
	wg.Wait()
}

// streamed runs run in a goroutine and reads what it emits; run's error (or
// its end) ends the stream. close cancels run's context.
func streamed(ctx context.Context, run func(ctx context.Context, emit func(doorToken)) error) *doorReader {
	ctx, cancel := context.WithCancel(ctx)
	toks := make(chan doorToken)
	done := make(chan error, 1)
	go func() {
		err := run(ctx, func(tok doorToken) {
			select {
			case toks <- tok:
			case <-ctx.Done():
			}
		})
		if err == nil {
			err = fmt.Errorf("the stream ended")
		}
		done <- err
	}()
	next := func() (doorToken, error) {
		select {
		case tok := <-toks:
			return tok, nil
		case err := <-done:
			done <- err
			return doorToken{}, err
		}
	}
	return &doorReader{next: next, close: cancel}
}

// postSSE posts body to url as JSON and calls each with every SSE event of
// the answer.
func postSSE(ctx context.Context, url, token, body string, each func(sse.Event) error) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	sr := sse.NewReader(resp.Body, 4096, 1<<20)
	for {
		ev, err := sr.Next()
		if err != nil {
			return err
		}
		if err := each(ev); err != nil {
			return err
		}
	}
}

// aguiDoor runs an AG-UI run on the conversation (its id as threadId).
func aguiDoor(token string) func(ctx context.Context, p *proc, id, text string) *doorReader {
	return func(ctx context.Context, p *proc, id, text string) *doorReader {
		body, _ := json.Marshal(map[string]any{"threadId": id, "runId": "run-" + id, "state": map[string]any{}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{},
			"messages": []any{map[string]any{"id": "u-" + id, "role": "user", "content": text}}})
		return streamed(ctx, func(ctx context.Context, emit func(doorToken)) error {
			return postSSE(ctx, p.url+"/agui", token, string(body), func(ev sse.Event) error {
				var e struct{ Type, Delta, Message string }
				if err := json.Unmarshal(ev.Data, &e); err != nil {
					return err
				}
				switch e.Type {
				case "TEXT_MESSAGE_CONTENT":
					emit(doorToken{kind: agentik.EvAppendText, text: e.Delta})
				case "RUN_FINISHED":
					emit(doorToken{kind: agentik.EvEnd})
				case "RUN_ERROR":
					return fmt.Errorf("RUN_ERROR %s", e.Message)
				}
				return nil
			})
		})
	}
}

// a2aDoor streams an A2A message (0.3, message/stream) into the
// conversation (its id as contextId).
func a2aDoor(token string) func(ctx context.Context, p *proc, id, text string) *doorReader {
	return func(ctx context.Context, p *proc, id, text string) *doorReader {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": "m-" + id, "contextId": id, "parts": []any{map[string]any{"kind": "text", "text": text}}}}})
		return streamed(ctx, func(ctx context.Context, emit func(doorToken)) error {
			return postSSE(ctx, p.url+"/a2a", token, string(body), func(ev sse.Event) error {
				var e struct {
					Error  json.RawMessage
					Result struct {
						Kind   string
						Final  bool
						Append bool
						Status struct{ State string }
						// Artifact's text parts are the deltas.
						Artifact struct{ Parts []struct{ Text string } }
					}
				}
				if err := json.Unmarshal(ev.Data, &e); err != nil {
					return err
				}
				if e.Error != nil {
					return fmt.Errorf("error %s", e.Error)
				}
				switch r := e.Result; {
				case r.Kind == "status-update" && r.Final:
					if r.Status.State != "completed" {
						return fmt.Errorf("final state %s", r.Status.State)
					}
					emit(doorToken{kind: agentik.EvEnd})
				case r.Kind == "status-update" && r.Status.State == "working":
					emit(doorToken{kind: agentik.EvWorking})
				case r.Kind == "artifact-update":
					// A chunk without append replaces the artifact (the
					// stream sends the stored answer whole when it read it
					// from the journal); one artifact per answer here.
					tok := doorToken{kind: agentik.EvAppendText, reset: !r.Append}
					for _, part := range r.Artifact.Parts {
						tok.text += part.Text
					}
					emit(tok)
				}
				return nil
			})
		})
	}
}

// mcpDoor calls the MCP facade's ask (the official Go SDK, the current
// revision) with a progress token: each progress notification is a delta,
// the result the end (its answer must be fiveWords).
func mcpDoor(token string) func(ctx context.Context, p *proc, id, text string) *doorReader {
	return func(ctx context.Context, p *proc, id, text string) *doorReader {
		return streamed(ctx, func(ctx context.Context, emit func(doorToken)) error {
			client := sdk.NewClient(&sdk.Implementation{Name: "agentik-test", Version: "1"}, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
					emit(doorToken{kind: agentik.EvAppendText, text: r.Params.Message})
				}})
			tr := &sdk.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: tokenTransport{token}}, MaxRetries: -1}
			cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				return err
			}
			defer cs.Close()
			params := &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": text, "conversation_id": id}}
			params.SetProgressToken("p-" + id)
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				return err
			}
			if got := toolText(res); res.IsError || got != fiveWords {
				return fmt.Errorf("ask answered %q (error %v)", got, res.IsError)
			}
			emit(doorToken{kind: agentik.EvEnd})
			<-ctx.Done()
			return nil
		})
	}
}
