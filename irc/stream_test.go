package irc

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
)

var allCaps = []string{"batch", "draft/chathistory", "echo-message", "labeled-response", "message-tags", "server-time"}

// A streamed answer with a tool call: the client's message is echoed with
// its stored id, typing is shown, the tool call and its result arrive as
// CTCP AGENTIK with vendor tags, each line of the answer arrives as soon as
// it is complete, and the last line carries the assistant message's id.
func TestStreamedMultiLineAnswerWithToolCall(t *testing.T) {
	s := newStack(t, Options{}, nil)
	gate := llmtest.NewGate()
	s.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_7")),
		llmtest.Stream().Role().Content("First ", "line.\nSecond", " line.\n").Pause(gate).Content("Third line.").Finish("stop").Done(),
	)
	c := s.dial()
	c.register("alice", "", allCaps...)
	c.join("#t")
	c.send("@label=m1 PRIVMSG #t :what time is it?")

	echo := c.until(is("PRIVMSG", "#t"))
	e := echo[len(echo)-1]
	if !strings.HasPrefix(e.Source, "alice!") || e.Params[1] != "what time is it?" || tag(e, "label") != "m1" || tag(e, "msgid") == "" || tag(e, "time") == "" {
		t.Fatalf("echo %v", e)
	}
	var typing bool
	var call, result ircmsg.Message
	for _, m := range echo {
		typing = typing || m.Command == "TAGMSG" && tag(m, "+typing") == "active"
	}
	rest := c.until(func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" && m.Params[1] == "Second line." })
	var lines []string
	for _, m := range rest {
		switch {
		case m.Command == "TAGMSG":
			typing = typing || tag(m, "+typing") == "active"
		case m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "\x01AGENTIK TOOL_CALL "):
			call = m
		case m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "\x01AGENTIK TOOL_RESULT "):
			result = m
		case m.Command == "PRIVMSG":
			lines = append(lines, m.Params[1])
		}
	}
	// Two lines arrived while the model is still paused: they were sent
	// as soon as they were complete.
	if strings.Join(lines, "|") != "First line.|Second line." {
		t.Fatalf("lines before the end: %q", lines)
	}
	if !typing {
		t.Fatal("no +typing=active")
	}
	if call.Params[1] != "\x01AGENTIK TOOL_CALL current_time call_7 {\"timezone\":\"UTC\"}\x01" ||
		tag(call, vendor+"event") != "tool_call" || tag(call, vendor+"call-id") != "call_7" ||
		tag(call, vendor+"tool") != "current_time" || tag(call, vendor+"arguments") != `{"timezone":"UTC"}` || tag(call, "bot") != "" || !call.HasTag("bot") {
		t.Fatalf("tool call %q %v", call.Params, call.AllTags())
	}
	if !strings.HasPrefix(result.Params[1], "\x01AGENTIK TOOL_RESULT current_time call_7 ok ") || tag(result, vendor+"event") != "tool_result" {
		t.Fatalf("tool result %q %v", result.Params, result.AllTags())
	}
	gate.Release()
	last := c.until(is("PRIVMSG", "#t", "Third line."))
	done := c.until(is("TAGMSG"))
	if tag(done[len(done)-1], "+typing") != "done" {
		t.Fatalf("typing end %v", done)
	}

	id := s.conversations("")[0].ID
	j := s.journal(id, "")
	var user, asst agentik.Message
	for _, m := range j {
		switch m.Type {
		case agentik.MsgUser:
			user = m
		case agentik.MsgAssistant:
			asst = m
		}
	}
	if tag(e, "msgid") != user.ID {
		t.Fatalf("echo msgid %s, user message %s", tag(e, "msgid"), user.ID)
	}
	if got := tag(last[len(last)-1], "msgid"); got != asst.ID {
		t.Fatalf("last line msgid %s, assistant message %s", got, asst.ID)
	}
	if j[0].Context.Origin.Channel != "irc" {
		t.Fatalf("origin %+v", j[0].Context)
	}
}

func TestStopInterruptsTheAnswer(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Stream().Role().Content("partial line\n", "and more").Hang())
	c := s.dial()
	c.register("alice", "", "message-tags")
	c.join("#s")
	c.send("PRIVMSG #s :talk")
	c.answer("#s", "partial line")
	c.send("PRIVMSG #s :!stop")
	lines := c.until(func(m ircmsg.Message) bool {
		return m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "\x01AGENTIK INTERRUPTED")
	})
	intr := lines[len(lines)-1]
	if intr.Params[1] != "\x01AGENTIK INTERRUPTED user\x01" || tag(intr, vendor+"reason") != "user" {
		t.Fatalf("%q %v", intr.Params, intr.AllTags())
	}
	id := s.conversations("")[0].ID
	s.waitIdle(id, "")
	j := s.journal(id, "")
	if len(j) != 2 || j[1].Type != agentik.MsgAssistant || !j[1].Interrupted {
		t.Fatalf("journal %+v", j)
	}
	// What was kept of the answer is what the client saw: the rest of the
	// partial answer ("and more", if the model had sent it before the
	// interrupt) arrives before the INTERRUPTED line.
	var rest []string
	for _, m := range lines {
		if m.Command == "PRIVMSG" && !strings.HasPrefix(m.Params[1], "\x01") {
			rest = append(rest, m.Params[1])
		}
	}
	if got, want := strings.Join(append([]string{"partial line"}, rest...), "\n"), strings.TrimSpace(agentik.JoinText(j[1].Content)); got != want {
		t.Fatalf("client saw %q, journal kept %q", got, want)
	}
	c.send("PRIVMSG #s :!stop")
	if m := c.until(is("NOTICE")); !strings.Contains(m[len(m)-1].Params[1], "Nothing to stop") {
		t.Fatalf("%v", m)
	}
}

func TestBusyPolicyRejectRefusesWhileATurnRuns(t *testing.T) {
	s := newStack(t, Options{IfBusy: agentik.BusyReject}, nil)
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("working\n").Pause(gate).Content("done").Finish("stop").Done())
	c := s.dial()
	c.register("alice", "")
	c.join("#b")
	c.send("PRIVMSG #b :first")
	c.answer("#b", "working")
	c.send("PRIVMSG #b :second")
	if m := c.next(); m.Command != errCannotSendToChan || !strings.Contains(m.Params[2], "still answering") {
		t.Fatalf("%v", m)
	}
	gate.Release()
	c.answer("#b", "done")
	id := s.conversations("")[0].ID
	s.waitIdle(id, "")
	for _, m := range s.journal(id, "") {
		if m.Type == agentik.MsgUser && agentik.JoinText(m.Content) == "second" {
			t.Fatal("a refused message was stored")
		}
	}
}

func TestBusyPolicyEnqueueAnswersInOrder(t *testing.T) {
	s := newStack(t, Options{}, nil)
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("one\n").Pause(gate).Content("one done").Finish("stop").Done(), llmtest.Text("two done"))
	c := s.dial()
	c.register("alice", "")
	c.join("#q")
	c.send("PRIVMSG #q :first")
	c.answer("#q", "one")
	c.send("PRIVMSG #q :second")
	gate.Release()
	c.answer("#q", "one done")
	c.answer("#q", "two done")
}

// Long lines are split at word boundaries within 512 bytes, never inside
// a UTF-8 sequence, whatever the nick and channel lengths; words longer
// than a line are cut at a character boundary.
func TestLongLinesSplitWithinTheLimitOnCharacterBoundaries(t *testing.T) {
	words := []string{"héllo", "wörld", "日本語のテキスト", "🙂🙃", strings.Repeat("ж", 300), "end."}
	var b strings.Builder
	for i := range 60 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	text := b.String()
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Stream().Role().Content(llmtest.SplitN(text, 97)...).Finish("stop").Done())
	nick := strings.Repeat("n", 32)
	channel := "#" + strings.Repeat("ч", 31) // 63 bytes
	c := s.dial()
	c.register(nick, "", "message-tags", "server-time")
	c.join(channel)
	c.send("PRIVMSG " + channel + " :go")
	texts, others := c.answer(channel, "end.")
	_ = others
	if len(texts) < 10 {
		t.Fatalf("only %d lines", len(texts))
	}
	for _, l := range c.rawLines() {
		body := l
		if strings.HasPrefix(l, "@") {
			body = l[strings.IndexByte(l, ' ')+1:]
		}
		if len(body)+2 > 512 || !utf8.ValidString(l) {
			t.Fatalf("line of %d bytes (valid UTF-8: %v): %q", len(body)+2, utf8.ValidString(l), l)
		}
	}
	// Rejoined, the pieces give the text back: a cut at a space lost only
	// that space; a cut inside a long word lost nothing.
	got := strings.Join(texts, "\x00")
	if strings.ReplaceAll(strings.ReplaceAll(got, "\x00", ""), " ", "") != strings.ReplaceAll(text, " ", "") {
		t.Fatalf("text changed:\n%s\n%s", got, text)
	}
	for _, l := range texts {
		if strings.HasPrefix(l, " ") || strings.HasSuffix(l, " ") {
			t.Fatalf("piece with edge space %q", l)
		}
	}
}

func TestImagesAreLinks(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Text("a nice picture"))
	c := s.dial()
	c.register("alice", "")
	c.join("#img")
	id := s.conversations("")[0].ID
	conv, err := s.eng.Conversation(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	res, err := conv.Send(testCtx(t), agentik.SendRequest{Content: []agentik.Content{agentik.Text("look"), agentik.Image("image/png", png)},
		Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "web", User: "", DisplayName: "Web User"}}})
	if err != nil {
		t.Fatal(err)
	}
	lines := c.until(is("PRIVMSG", "#img", "a nice picture"))
	var look, link bool
	for _, m := range lines {
		if m.Command == "PRIVMSG" && m.Nick() == "Web-User" {
			look = look || m.Params[1] == "look"
			link = link || m.Params[1] == "[image image/png] http://img.test/agentik/"+id+"/"+strconv.FormatInt(res.Seq, 10)+"/0"
		}
	}
	if !look || !link {
		t.Fatalf("image message shown as %v", lines)
	}
}

// Failures, failed tools and compactions reach the channel as CTCP
// AGENTIK lines with their vendor tags.
func TestErrorsFailedToolsAndCompactionsAreCTCP(t *testing.T) {
	eng, llm := newEngine(t, "agentik", func(o *engine.Options) { o.ContextTokens = 1200; o.MaxToolRounds = 2 })
	s := newStackFor(t, eng, llm, Options{}, nil, nil)
	long := strings.Repeat("many words of a long answer ", 80) + "END"
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		switch text := r.LastUserText(); {
		case r.Messages[0].Role == "system" && strings.Contains(r.Messages[0].Text(), "condense"):
			return llmtest.Text("a short summary")
		case text == "fail":
			return llmtest.ServerError()
		case text == "nosuchtool" && r.Messages[len(r.Messages)-1].Role != "tool":
			return llmtest.ToolCalls(llmtest.Call("no_such_tool", `{}`).WithID("call_x"))
		case text == "long":
			return llmtest.Text(long)
		}
		return llmtest.Text("fine")
	})
	c := s.dial()
	c.register("alice", "", "message-tags")
	c.join("#e")
	ctcpOf := func(kind string) ircmsg.Message {
		t.Helper()
		ls := c.until(func(m ircmsg.Message) bool {
			return m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "\x01AGENTIK "+kind)
		})
		return ls[len(ls)-1]
	}
	c.send("PRIVMSG #e :fail")
	if e := ctcpOf("ERROR"); tag(e, vendor+"event") != "error" || tag(e, vendor+"code") == "" || tag(e, vendor+"reply-to") == "" {
		t.Fatalf("%q %v", e.Params, e.AllTags())
	}
	c.send("PRIVMSG #e :nosuchtool")
	if r := ctcpOf("TOOL_RESULT"); !strings.HasPrefix(r.Params[1], "\x01AGENTIK TOOL_RESULT no_such_tool call_x error ") ||
		tag(r, vendor+"event") != "tool_failed" || !r.HasTag(vendor+"is-error") {
		t.Fatalf("%q %v", r.Params, r.AllTags())
	}
	c.answer("#e", "fine")
	var compaction *ircmsg.Message
	for i := 0; i < 5 && compaction == nil; i++ {
		c.send("PRIVMSG #e :long")
		_, others := c.answer("#e", "END")
		for _, m := range others {
			if m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "\x01AGENTIK COMPACTION") {
				compaction = &m
			}
		}
	}
	if m := compaction; m == nil || !strings.HasPrefix(m.Params[1], "\x01AGENTIK COMPACTION dropped=") || tag(*m, vendor+"event") != "compaction_triggered" {
		t.Fatalf("compaction: %v", m)
	}
}
