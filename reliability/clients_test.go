package reliability_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
)

// wsFrame is any server message of the WebSocket protocol, as a raw client
// sees it.
type wsFrame struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	Text           string `json:"text"`
	Code           string `json:"code"`
	Reason         string `json:"reason"`
	ConversationID string `json:"conversation_id"`
}

func (s *server) wsURL() string { return "ws" + strings.TrimPrefix(s.url, "http") + "/agentik/ws" }

// readFrame reads one server message from a raw connection.
func readFrame(ctx context.Context, c *websocket.Conn) (wsFrame, error) {
	var f wsFrame
	_, b, err := c.Read(ctx)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, err
	}
	return f, nil
}

// awaitTurnEnd follows a conversation through the native API's Go client
// (which resumes a stream that is cut off) until the end of the turn
// answering replyTo, and returns its reason.
func awaitTurnEnd(ctx context.Context, t *testing.T, s *server, conv, replyTo string) string {
	t.Helper()
	cl := httpapi.NewClient(s.url+"/agentik", httpapi.WithReconnect(10*time.Millisecond, 200*time.Millisecond, 20))
	cv, err := cl.Conversation(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer cv.Close()
	stream, err := cv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	counts := map[string]int{}
	for ev := range stream.C() {
		counts[ev.Type]++
		if ev.Type == agentik.EvEnd && ev.ReplyTo == replyTo {
			return ev.Reason
		}
	}
	t.Fatalf("event stream ended before the end of turn %s: %v (ctx %v); received %v", replyTo, stream.Err(), ctx.Err(), counts)
	return ""
}

// askWS attaches a Go SDK connection to conv, sends text and returns the
// answer and the END reason. It proves the server still serves the
// conversation over WebSocket.
func askWS(ctx context.Context, t *testing.T, wsURL, conv, text string) (string, string) {
	t.Helper()
	conn, err := ws.Dial(ctx, wsURL, &ws.DialOptions{ConversationID: conv})
	if err != nil {
		t.Fatalf("reconnect to %s: %v", conv, err)
	}
	defer conn.Close()
	if conn.ConversationID() != conv {
		t.Fatalf("attached to %s, want %s", conn.ConversationID(), conv)
	}
	if conn.Status().Working {
		t.Fatalf("STATUS says a turn is running; none should be")
	}
	if err := conn.Send(ctx, text); err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder
	for m := range conn.Messages() {
		switch m := m.(type) {
		case *ws.TextChunk:
			answer.WriteString(m.Text)
		case *ws.Error:
			t.Fatalf("ERROR %s: %s", m.Code, m.Details)
		case *ws.End:
			return answer.String(), m.Reason
		}
	}
	t.Fatalf("connection ended before END: %v", conn.Err())
	return "", ""
}

// assistantOf returns the journal's last assistant message answering
// replyTo.
func assistantOf(msgs []agentik.Message, replyTo string) (*agentik.Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == agentik.MsgAssistant && msgs[i].ReplyTo == replyTo {
			return &msgs[i], true
		}
	}
	return nil, false
}

// TestSlowWebSocketConsumer: a raw WebSocket client attaches to a
// conversation and stops reading while a 5,000-piece answer (1.25 MiB)
// streams, over a connection whose socket send buffer is small (a slow link;
// see smallSendBufferListener). The server cuts it off (its subscription overflows; once it reads
// again it gets ERROR unavailable and close 1013, or the connection is gone)
// without holding the turn: another subscriber sees the turn complete while
// the slow client still reads nothing. A new connection with
// ?conversation_id= then attaches and is answered; the answer the slow client
// missed is whole in the journal.
func TestSlowWebSocketConsumer(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	// Waits end on events; the context only ends them before go test's
	// -timeout would (a loaded machine took 23 s of the 60 s this once had).
	ctx := testenv.Wait(t)

	wsURL := s.serveWS(t)
	slow, _, err := websocket.Dial(ctx, wsURL+"?conversation_id="+conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	slow.SetReadLimit(1 << 20)
	// STATUS is sent after the server subscribed: from here on the slow
	// client is a subscriber of the turn. Then it reads nothing.
	if f, err := readFrame(ctx, slow); err != nil || f.Type != "STATUS" {
		t.Fatalf("first frame %+v, %v; want STATUS", f, err)
	}

	const pieces, size = 5000, 256
	chunks := make([]string, pieces)
	for i := range chunks {
		chunks[i] = strings.Repeat(string(rune('a'+i%26)), size)
	}
	s.llm.Enqueue(llmtest.Stream().Role().Content(chunks...).Finish("stop").Done())
	id := s.send(t, conv, "a long answer, please").MessageID

	// The turn is not held by the client that does not read.
	if reason := awaitTurnEnd(ctx, t, s, conv, id); reason != agentik.EndCompleted {
		t.Fatalf("turn ended %q, want completed", reason)
	}
	msgs, _ := s.journal(t, conv)
	am, ok := assistantOf(msgs, id)
	if !ok || am.Interrupted || len(agentik.JoinText(am.Content)) != pieces*size {
		t.Fatalf("journal does not hold the whole answer: %+v", am)
	}

	// Now the slow client reads what reached it: it was cut off, never given
	// the END of a turn whose events it did not all receive.
	var chunkBytes int
	var got []string
	var readErr error
	for {
		f, err := readFrame(ctx, slow)
		if err != nil {
			readErr = err
			break
		}
		switch f.Type {
		case "AGENT_EVENT":
			if f.Subtype == "TEXT_CHUNK" {
				chunkBytes += len(f.Text)
				continue
			}
			got = append(got, f.Subtype+":"+f.Reason)
		case "ERROR":
			got = append(got, "ERROR:"+f.Code)
		default:
			got = append(got, f.Type)
		}
	}
	status := websocket.CloseStatus(readErr)
	t.Logf("slow client: %d of %d answer bytes, then %v, close %d (%v)", chunkBytes, pieces*size, got, status, readErr)
	if ctx.Err() != nil {
		t.Fatalf("the slow client was never cut off: %v", readErr)
	}
	for _, g := range got {
		if strings.HasPrefix(g, "END") {
			t.Fatalf("the slow client got END after missing events: %v", got)
		}
	}
	if chunkBytes >= pieces*size {
		t.Fatalf("the slow client received the whole answer; it was not cut off")
	}
	switch {
	case status == websocket.StatusTryAgainLater:
		if len(got) == 0 || got[len(got)-1] != "ERROR:"+agentik.EUnavailable {
			t.Errorf("closed with 1013 after %v; want ERROR unavailable before the close", got)
		}
	case status == -1 && len(got) == 0:
		// Dropped by the write timeout: the connection is gone, no frame.
	default:
		t.Errorf("cut off with %v and close %d; want ERROR unavailable + 1013, or a dropped connection", got, status)
	}

	// Resume = a new connection to the same conversation: it attaches and
	// works. (The missed answer is read from the journal, as above.) The
	// long answer makes the engine compact its working memory, which may
	// take the scripted reply for its summary: the answer is compared with
	// the journal rather than with the script.
	s.llm.Enqueue(llmtest.Text("back again"))
	answer, reason := askWS(ctx, t, wsURL, conv, "are you there?")
	msgs, _ = s.journal(t, conv)
	if last := msgs[len(msgs)-1]; answer == "" || answer != agentik.JoinText(last.Content) || reason != agentik.EndCompleted {
		t.Fatalf("after reconnect: %q, END %q", answer, reason)
	}
}

// TestAGUIClientDisconnectMidTurn: an AG-UI run whose HTTP request is
// cancelled while the answer streams. With the default on-disconnect policy
// (interrupt) the turn is interrupted: the journal holds the user message and
// the partial answer marked interrupted, and the thread answers its next run.
func TestAGUIClientDisconnectMidTurn(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer events.close()

	gate := llmtest.NewGate()
	defer gate.Release()
	s.llm.Enqueue(llmtest.Stream().Role().Content("partial ", "answer").Pause(gate).Content(" never sent").Finish("stop").Done())

	run := func(runID string, msgs string) string {
		return `{"threadId":"` + conv + `","runId":"` + runID + `","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[` + msgs + `]}`
	}
	u1 := `{"id":"u1","role":"user","content":"first question"}`
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, "POST", s.url+"/agui", strings.NewReader(run("r1", u1)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := sseClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run: %d", resp.StatusCode)
	}
	agui := &sseStream{resp: resp, rd: bufio.NewReaderSize(resp.Body, 64<<10)}
	// Read the run until answer text has arrived, with the model paused
	// mid-answer.
	waitFor(t, agui, 10*time.Second, func(e sseEvent) bool {
		return strings.Contains(e.data, `"type":"TEXT_MESSAGE_CONTENT"`)
	})
	<-gate.Reached()
	rcancel() // the client goes away (abortRun, a closed tab, a dropped network)
	resp.Body.Close()

	evs := waitFor(t, events, 10*time.Second, func(e sseEvent) bool { return e.event == agentik.EvEnd })
	if r := endReason(evs[len(evs)-1]); r != agentik.EndInterrupted {
		t.Fatalf("turn ended %q, want interrupted (events %s)", r, eventTypes(evs))
	}
	if !strings.Contains(","+eventTypes(evs)+",", ","+agentik.EvInterrupted+",") {
		t.Errorf("no %s event before the end: %s", agentik.EvInterrupted, eventTypes(evs))
	}

	msgs, _ := s.journal(t, conv)
	if len(msgs) != 2 || msgs[0].Type != agentik.MsgUser || agentik.JoinText(msgs[0].Content) != "first question" {
		t.Fatalf("journal after the disconnect: %+v", msgs)
	}
	if a := msgs[1]; a.Type != agentik.MsgAssistant || !a.Interrupted || a.ReplyTo != msgs[0].ID || agentik.JoinText(a.Content) != "partial answer" {
		t.Fatalf("want the partial answer stored as interrupted, got %+v", a)
	}

	// The thread is usable: the next run (the client's history plus a new
	// message) is answered to RUN_FINISHED.
	s.llm.Enqueue(llmtest.Text("second answer"))
	r := do(t, "POST", s.url+"/agui", []byte(run("r2", u1+`,{"id":"u2","role":"user","content":"second question"}`)), "Accept", "text/event-stream")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"RUN_FINISHED"`) || strings.Contains(string(r.body), `"RUN_ERROR"`) {
		t.Fatalf("next run: %d %.2000s", r.status, r.body)
	}
	msgs, _ = s.journal(t, conv)
	if len(msgs) != 4 || msgs[2].Type != agentik.MsgUser || agentik.JoinText(msgs[2].Content) != "second question" {
		t.Fatalf("journal after the next run: %+v", msgs)
	}
	if a := msgs[3]; a.Type != agentik.MsgAssistant || a.Interrupted || a.ReplyTo != msgs[2].ID || agentik.JoinText(a.Content) != "second answer" {
		t.Fatalf("next run's answer: %+v", a)
	}
}

// TestWebSocketClientDropsMidTurn: a WebSocket client sends a message and
// drops its connection (no close handshake) while the answer streams. The
// turn belongs to the conversation, not to the connection: it completes, the
// journal has the message answered exactly once, and a new connection to the
// conversation is served.
func TestWebSocketClientDropsMidTurn(t *testing.T) {
	s := newServer(t, serverOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c, _, err := websocket.Dial(ctx, s.wsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	st, err := readFrame(ctx, c)
	if err != nil || st.Type != "STATUS" || st.ConversationID == "" {
		t.Fatalf("first frame %+v, %v; want STATUS", st, err)
	}
	conv := st.ConversationID
	events, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer events.close()

	gate := llmtest.NewGate()
	defer gate.Release()
	s.llm.Enqueue(llmtest.Stream().Role().Content("before ", "the drop").Pause(gate).Content(", after the drop").Finish("stop").Done())
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"USER_MESSAGE","text":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			t.Fatalf("before any answer text: %v", err)
		}
		if f.Type == "AGENT_EVENT" && f.Subtype == "TEXT_CHUNK" {
			break
		}
		if f.Type == "ERROR" || f.Subtype == "END" {
			t.Fatalf("unexpected %+v", f)
		}
	}
	<-gate.Reached()
	c.CloseNow() // the client vanishes mid-turn
	gate.Release()

	evs := waitFor(t, events, 10*time.Second, func(e sseEvent) bool { return e.event == agentik.EvEnd })
	if r := endReason(evs[len(evs)-1]); r != agentik.EndCompleted {
		t.Fatalf("turn ended %q, want completed (events %s)", r, eventTypes(evs))
	}
	msgs, _ := s.journal(t, conv)
	if len(msgs) != 2 || msgs[0].Type != agentik.MsgUser {
		t.Fatalf("journal: %+v", msgs)
	}
	checkJournal(t, s, conv, []string{msgs[0].ID})
	if got := agentik.JoinText(msgs[1].Content); got != "before the drop, after the drop" {
		t.Fatalf("stored answer %q", got)
	}

	// The server keeps serving: a new connection to the conversation works,
	// and so does one to a new conversation.
	s.llm.Enqueue(llmtest.Text("still here"))
	if answer, reason := askWS(ctx, t, s.wsURL(), conv, "still there?"); answer != "still here" || reason != agentik.EndCompleted {
		t.Fatalf("after the drop: %q, END %q", answer, reason)
	}
	msgs, _ = s.journal(t, conv)
	var users []string
	for _, m := range msgs {
		if m.Type == agentik.MsgUser {
			users = append(users, m.ID)
		}
	}
	checkJournal(t, s, conv, users)
}

// smallSendBufferListener gives each accepted connection a 64 KiB socket
// send buffer (no autotuning): the kernel then holds little of what the
// server writes to a client that does not read, as on a slow link, instead
// of the megabytes loopback autotuning allows.
type smallSendBufferListener struct{ net.Listener }

func (l smallSendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// serveWS serves the WebSocket facade of s's engine on its own listener
// whose connections have small send buffers, and returns its URL.
func (s *server) serveWS(t *testing.T) string {
	wsSrv := ws.NewServer(s.eng, ws.Options{MaxMessageBytes: 64 << 10, Logger: slog.New(slog.NewTextHandler(s.logs, nil))})
	mux := http.NewServeMux()
	mux.Handle("GET /agentik/ws", wsSrv)
	hs := httptest.NewUnstartedServer(mux)
	hs.Listener = smallSendBufferListener{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		wsSrv.Shutdown(ctx)
		hs.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/agentik/ws"
}
