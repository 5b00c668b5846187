package irc

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
)

// approvalStack is a stack whose agent asks before current_time runs.
func approvalStack(t *testing.T) *stack {
	t.Helper()
	eng, llm := newEngine(t, "agentik", func(o *engine.Options) {
		o.Approval = agentik.ApprovalPolicy{{Pattern: "current_time", Action: agentik.ApprovalAsk}}
	})
	return newStackFor(t, eng, llm, Options{}, map[string]string{"alice": "tok-alice-1"}, nil)
}

func (c *client) login(nick string) {
	c.t.Helper()
	if got := c.sasl(nick, "alice", "tok-alice-1", "message-tags"); got != rplSASLSuccess {
		c.t.Fatalf("sasl: %s", got)
	}
	c.send("CAP END")
	c.until(is(rplEndOfMOTD))
}

// notice reads up to the agent's next NOTICE in target containing want.
func (c *client) notice(target, want string) ircmsg.Message {
	c.t.Helper()
	lines := c.until(func(m ircmsg.Message) bool {
		return m.Command == "NOTICE" && len(m.Params) == 2 && m.Params[0] == target && m.Nick() == "agentik" && strings.Contains(m.Params[1], want)
	})
	return lines[len(lines)-1]
}

// A call that needs approval is a NOTICE in the conversation's channel;
// !approve alone answers the one call that waits, !deny <id> reason and
// !deny reason (one waiting) deny; what cannot be answered is told in a
// NOTICE and changes nothing.
func TestApprovalNoticeApproveDeny(t *testing.T) {
	s := approvalStack(t)
	s.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_a")),
		llmtest.Text("Ran it."),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_b"), llmtest.Call("current_time", `{"timezone":"Asia/Tokyo"}`).WithID("call_c")),
		llmtest.Text("Both denied."),
	)
	c := s.dial()
	c.login("alice")
	c.join("#s")
	c.send("PRIVMSG #s :!approve")
	c.notice("#s", "Nothing waits for approval here.")

	c.send("PRIVMSG #s :time?")
	n := c.notice("#s", "Approval needed")
	if want := `Approval needed: current_time {"timezone":"UTC"} — answer !approve call_a or !deny call_a [reason]`; n.Params[1] != want {
		t.Fatalf("notice %q", n.Params[1])
	}
	if bot, _ := n.GetTag("bot"); !bot {
		t.Fatalf("no bot tag: %v", n.AllTags())
	}
	c.send("PRIVMSG #s :!approve")
	c.notice("#s", "Tool call call_a approved by alice")
	c.answer("#s", "Ran it.")

	c.send("PRIVMSG #s :two now")
	c.notice("#s", "!approve call_b")
	c.notice("#s", "!approve call_c")
	c.send("PRIVMSG #s :!approve")
	c.notice("#s", "2 tool calls wait for approval (call_b, call_c): say which, !approve <call id>")
	c.send("PRIVMSG #s :!approve call_b with edits")
	c.notice("#s", "Usage: !approve [<call id>]")
	c.send("PRIVMSG #s :!deny call_zz")
	c.notice("#s", "!deny: no tool call call_zz waits for approval here; 2 tool calls wait")
	c.send("PRIVMSG #s :!deny call_b too risky")
	c.notice("#s", "Tool call call_b denied by alice: too risky")
	c.send("PRIVMSG #s :!approve call_b")
	if m := c.notice("#s", "!approve: "); !strings.Contains(m.Params[1], "1 tool call waits for approval (call_c)") && !strings.Contains(m.Params[1], "answered") {
		t.Fatalf("second answer: %q", m.Params[1])
	}
	c.send("PRIVMSG #s :!deny not wanted")
	c.notice("#s", "Tool call call_c denied by alice: not wanted")
	c.answer("#s", "Both denied.")

	id := s.conversations("alice")[0].ID
	s.waitIdle(id, "alice")
	results := map[string]string{}
	var users int
	for _, m := range s.journal(id, "alice") {
		switch m.Type {
		case agentik.MsgUser:
			users++
		case agentik.MsgToolResult:
			results[m.CallID] = agentik.JoinText(m.Content)
			if m.IsError != (m.CallID != "call_a") {
				t.Fatalf("result %+v", m)
			}
		}
	}
	if users != 2 || results["call_b"] != "denied by the user: too risky" || results["call_c"] != "denied by the user: not wanted" || results["call_a"] == "" {
		t.Fatalf("users %d results %v", users, results)
	}
}

// Long arguments are shortened so the NOTICE fits one 512-byte line, the
// call id and the commands whole; a client that joins while the call
// waits is told about it.
func TestApprovalNoticeFitsAndRejoin(t *testing.T) {
	s := approvalStack(t)
	long := `{"timezone":"` + strings.Repeat("é", 1500) + `"}`
	s.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", long).WithID("call_long")), llmtest.Text("Fine."))
	c := s.dial()
	c.login("alice")
	c.join("#s")
	c.send("PRIVMSG #s :go")
	c.notice("#s", "Approval needed")
	raw := c.rawLines()
	var line string
	for _, l := range raw {
		if strings.Contains(l, "Approval needed") {
			line = l
		}
	}
	if _, rest, ok := strings.Cut(line, " :agentik!"); ok {
		line = ":agentik!" + rest // without the tags, which have their own budget
	}
	if len(line)+2 > 512 || !strings.HasSuffix(line, "… — answer !approve call_long or !deny call_long [reason]") {
		t.Fatalf("%d bytes: %q", len(line), line)
	}

	d := s.dial()
	d.login("alice2")
	d.join("#s")
	d.notice("#s", "!approve call_long")
	d.send("PRIVMSG #s :!approve call_long")
	d.notice("#s", "Tool call call_long approved by alice")
	c.notice("#s", "Tool call call_long approved by alice")
	c.answer("#s", "Fine.")
}

// FuzzApprovalNotice: whatever the tool's name and arguments, the NOTICE
// is valid UTF-8 within the budget and ends with the call id and the
// commands whole (for call ids of a sane length).
func FuzzApprovalNotice(f *testing.F) {
	f.Add("send_mail", `{"to":"bob"}`, "call_1", 400)
	f.Add(strings.Repeat("n", 300), strings.Repeat("é", 900), "call_abcdefghijklmnopqrstuvwxyz0123456789", 300)
	f.Add("x", "a\r\nb\x01c\xff", "c", 120)
	f.Fuzz(func(t *testing.T, name, args, callID string, max int) {
		if max < 300 || max > 510 || len(callID) > 64 || strings.ContainsAny(callID, "\r\n\x00\x01 ") || !utf8.ValidString(callID) {
			return
		}
		got := approvalNotice(name, args, callID, max)
		tail := " — answer !approve " + callID + " or !deny " + callID + " [reason]"
		if len(got) > max || !utf8.ValidString(got) || !strings.HasSuffix(got, tail) || strings.ContainsAny(got, "\r\n\x00\x01") {
			t.Fatalf("%d > %d bytes, or bad: %q", len(got), max, got)
		}
	})
}
