package irc

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/llmtest"
)

// Several agents, one server: each is a nick; "#name@agent" and a PRIVMSG to
// its nick reach its conversations; an agent a principal may not use does
// not exist for it.
func TestSeveralAgents(t *testing.T) {
	support, supportLLM := newEngine(t, "support")
	supportLLM.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("support says: " + r.LastUserText()) })
	mayUse := func(principal, agent string) bool { return agent != "support" || principal == "alice" }
	s := newStackOn(t, Options{MayUse: mayUse}, twoUsers, nil, Agent{ID: "support", Agent: support})
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("agentik says: " + r.LastUserText()) })

	a := s.dial()
	a.register("alice", "tok-alice-1")
	if p := params(a.join("#help@support"), rplNamReply); p[0][3] != "@support alice" {
		t.Fatalf("names %v", p)
	}
	a.send("PRIVMSG #help@support :hi")
	a.answerFrom("support", "#help@support", "support says: hi")
	a.join("#help") // the default agent's #help is another conversation
	a.send("PRIVMSG #help :hi")
	a.answer("#help", "agentik says: hi")
	a.send("PRIVMSG support :direct")
	a.answerFrom("support", "alice", "support says: direct")
	if convs := conversationsOf(t, support, "alice"); len(convs) != 2 {
		t.Fatalf("support has %d conversations of alice", len(convs))
	}
	a.send("LIST")
	list := a.until(is(rplListEnd))
	var names []string
	for _, p := range params(list, rplList) {
		names = append(names, p[1])
	}
	if strings.Join(names, " ") != "#help #help@support" {
		t.Fatalf("LIST %v", names)
	}
	a.send("WHOIS support")
	if w := a.until(is(rplEndOfWhois)); len(params(w, rplWhoisBot)) != 1 {
		t.Fatalf("%v", w)
	}

	// bob may use only the default agent: support does not exist for him.
	b := s.dial()
	lines := b.register("bob", "tok-bob-22")
	for _, p := range params(lines, rplMOTD) {
		if strings.Contains(p[1], "Agents:") && strings.Contains(p[1], "support") {
			t.Fatalf("bob's MOTD names support: %v", p)
		}
	}
	if ls := b.join("#help@support"); ls[len(ls)-1].Command != errNoSuchChannel {
		t.Fatalf("%v", ls)
	}
	b.send("PRIVMSG support :hi")
	if m := b.next(); m.Command != errNoSuchNick {
		t.Fatalf("%v", m)
	}
	b.send("WHOIS support")
	if m := b.next(); m.Command != errNoSuchNick {
		t.Fatalf("%v", m)
	}
	supportConv := conversationsOf(t, support, "alice")[0].ID
	if ls := b.join("#" + supportConv); ls[len(ls)-1].Command != errNoSuchChannel {
		t.Fatalf("bob joined alice's support conversation: %v", ls)
	}
	if convs := conversationsOf(t, support, "bob"); len(convs) != 0 {
		t.Fatalf("bob reached support: %+v", convs)
	}
}
