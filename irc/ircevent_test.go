package irc

import (
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik/llmtest"
)

// The irc-go client (ircevent) against the server: SASL, labeled JOIN, a
// conversation with a tool call, and CHATHISTORY as a labeled batch.
func TestIrceventClient(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	s.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`)),
		llmtest.Text("It is now.\nGoodbye."),
	)
	conn := &ircevent.Connection{
		Server:       s.addr,
		Nick:         "alice",
		SASLLogin:    "alice",
		SASLPassword: "tok-alice-1",
		RequestCaps:  []string{"server-time", "message-tags", "batch", "labeled-response", "echo-message", "draft/chathistory"},
		Log:          log.New(io.Discard, "", 0),
		Timeout:      10 * time.Second,
	}
	got := make(chan ircmsg.Message, 100)
	conn.AddCallback("PRIVMSG", func(m ircmsg.Message) { got <- m })
	if err := conn.Connect(); err != nil {
		t.Fatal(err)
	}
	defer conn.Quit()
	go conn.Loop()
	if acked := conn.AcknowledgedCaps(); len(acked) != 7 { // the six asked for and sasl
		t.Fatalf("acked %v", acked)
	}
	if v := conn.ISupport()["CHATHISTORY"]; v != "100" {
		t.Fatalf("ISUPPORT CHATHISTORY=%q", v)
	}
	batch, err := conn.GetLabeledResponse(nil, "JOIN", "#ev")
	if err != nil {
		t.Fatal(err)
	}
	if batch.Command != "BATCH" || len(batch.Items) < 3 || batch.Items[0].Command != "JOIN" {
		t.Fatalf("labeled JOIN: %+v", batch)
	}
	if err := conn.Privmsg("#ev", "what time is it?"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for len(lines) == 0 || lines[len(lines)-1] != "agentik: Goodbye." {
		select {
		case m := <-got:
			lines = append(lines, m.Nick()+": "+strings.Trim(m.Params[1], "\x01"))
		case <-time.After(15 * time.Second):
			t.Fatalf("no answer; got %q", lines)
		}
	}
	if len(lines) != 5 || lines[0] != "alice: what time is it?" || !strings.HasPrefix(lines[1], "agentik: AGENTIK TOOL_CALL current_time ") ||
		!strings.HasPrefix(lines[2], "agentik: AGENTIK TOOL_RESULT current_time ") || lines[3] != "agentik: It is now." {
		t.Fatalf("%q", lines)
	}
	hist, err := conn.GetLabeledResponse(nil, "CHATHISTORY", "LATEST", "#ev", "*", "10")
	if err != nil {
		t.Fatal(err)
	}
	if hist.Params[1] != "chathistory" || len(hist.Items) != 5 {
		t.Fatalf("history batch %v with %d lines", hist.Params, len(hist.Items))
	}

	bad := &ircevent.Connection{Server: s.addr, Nick: "mallory", SASLLogin: "alice", SASLPassword: "not-the-token",
		Log: log.New(io.Discard, "", 0), Timeout: 10 * time.Second}
	if err := bad.Connect(); err == nil {
		bad.Quit()
		t.Fatal("SASL with a wrong token succeeded")
	}
}
