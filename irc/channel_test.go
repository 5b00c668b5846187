package irc

import (
	"slices"
	"strings"
	"testing"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

var twoUsers = map[string]string{"alice": "tok-alice-1", "bob": "tok-bob-22"}

func TestNamedChannelIsTheCallersOwnConversation(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	a := s.dial()
	a.register("alice", "tok-alice-1")
	lines := a.join("#Project")
	if j := lines[0]; j.Command != "JOIN" || j.Params[0] != "#Project" || !strings.HasPrefix(j.Source, "alice!") {
		t.Fatalf("join echo %v", j)
	}
	if p := params(lines, rplTopic); len(p) != 1 || p[0][2] != "#Project" {
		t.Fatalf("topic %v", lines)
	}
	if p := params(lines, rplNamReply); len(p) != 1 || p[0][3] != "@agentik alice" {
		t.Fatalf("names %v", lines)
	}
	ac := s.conversations("alice")
	if len(ac) != 1 || ac[0].Title != "#Project" {
		t.Fatalf("alice %+v", ac)
	}

	// Bob's #project is his own conversation, not alice's.
	b := s.dial()
	b.register("bob", "tok-bob-22")
	if p := params(b.join("#project"), rplNamReply); p[0][3] != "@agentik bob" {
		t.Fatalf("bob sees %v", p)
	}
	bc := s.conversations("bob")
	if len(bc) != 1 || bc[0].ID == ac[0].ID {
		t.Fatalf("bob %+v alice %+v", bc, ac)
	}

	// Leaving and coming back (any case) is the same conversation.
	a.send("PART #Project :later")
	if m := a.next(); m.Command != "PART" || m.Params[0] != "#Project" {
		t.Fatalf("part %v", m)
	}
	a.join("#PROJECT")
	if ac2 := s.conversations("alice"); len(ac2) != 1 || ac2[0].ID != ac[0].ID {
		t.Fatalf("rejoin made %+v", ac2)
	}
	a.send("JOIN #PROJECT") // already in: nothing
	a.send("PART #nowhere")
	if m := a.next(); m.Command != errNotOnChannel {
		t.Fatalf("%v", m)
	}
	a.send("JOIN bad,#ok")
	if m := a.next(); m.Command != errBadChanName {
		t.Fatalf("%v", m)
	}
}

func TestJoinByConversationID(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	ctx := agentik.WithPrincipal(testCtx(t), "alice")
	info, err := s.eng.CreateConversation(ctx, agentik.CreateRequest{Title: "from the web"})
	if err != nil {
		t.Fatal(err)
	}
	a := s.dial()
	a.register("alice", "tok-alice-1")
	name := "#" + info.ID
	lines := a.join(name)
	if p := params(lines, rplTopic); len(p) != 1 || p[0][2] != "from the web" {
		t.Fatalf("%v", lines)
	}
	b := s.dial()
	b.register("bob", "tok-bob-22")
	if ls := b.join(name); ls[len(ls)-1].Command != errNoSuchChannel {
		t.Fatalf("bob joined alice's conversation: %v", ls)
	}
	if ls := b.join("#" + agentik.NewID()); ls[len(ls)-1].Command != errNoSuchChannel {
		t.Fatalf("unknown id: %v", ls)
	}
	b.send("CHATHISTORY LATEST " + name + " * 10")
	if m := b.next(); m.Command != "FAIL" || m.Params[1] != "INVALID_TARGET" {
		t.Fatalf("bob read alice's history: %v", m)
	}
	if got := s.conversations("bob"); len(got) != 0 {
		t.Fatalf("bob has %+v", got)
	}
}

func TestTopicRenamesAndListShowsOwnConversations(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	ctx := agentik.WithPrincipal(testCtx(t), "alice")
	web, err := s.eng.CreateConversation(ctx, agentik.CreateRequest{Title: "web one"})
	if err != nil {
		t.Fatal(err)
	}
	a := s.dial()
	a.register("alice", "tok-alice-1")
	a.join("#a")
	a.join("#b")
	a.send("TOPIC #a :Planning the trip")
	if m := a.next(); m.Command != "TOPIC" || m.Params[1] != "Planning the trip" {
		t.Fatalf("%v", m)
	}
	a.send("TOPIC #a")
	if m := a.next(); m.Command != rplTopic || m.Params[2] != "Planning the trip" {
		t.Fatalf("%v", m)
	}
	titles := map[string]bool{}
	for _, c := range s.conversations("alice") {
		titles[c.Title] = true
	}
	if !titles["Planning the trip"] || !titles["#b"] {
		t.Fatalf("titles %v", titles)
	}
	a.send("LIST")
	list := a.until(is(rplListEnd))
	var names []string
	for _, p := range params(list, rplList) {
		names = append(names, p[1])
	}
	slices.Sort(names)
	want := []string{"#" + web.ID, "#a", "#b"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("LIST %v, want %v", names, want)
	}
	b := s.dial()
	b.register("bob", "tok-bob-22")
	b.send("LIST")
	if got := params(b.until(is(rplListEnd)), rplList); len(got) != 0 {
		t.Fatalf("bob lists %v", got)
	}
}

func TestDirectMessageToTheAgent(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	s.llm.Enqueue(llmtest.Text("Hello alice"), llmtest.Text("Hello again"))
	a := s.dial()
	a.register("alice", "tok-alice-1")
	a.send("PRIVMSG agentik :hi there")
	texts, _ := a.answer("alice", "Hello alice")
	if len(texts) != 1 {
		t.Fatalf("%v", texts)
	}
	id := directID("agentik", "alice")
	j := s.journal(id, "alice")
	if len(j) != 2 || agentik.JoinText(j[0].Content) != "hi there" || j[0].Context.Origin.Channel != "irc" || j[0].Context.Origin.DisplayName != "alice" {
		t.Fatalf("journal %+v", j)
	}
	// A client of alice that connects later follows the same direct
	// conversation; so does one that was there before it began (below).
	a2 := s.dial()
	a2.register("alice2", "tok-alice-1")
	a.send("PRIVMSG agentik :again")
	a.answer("alice", "Hello again")
	a2.answer("alice2", "Hello again")
	b1 := s.dial()
	b1.register("bob", "tok-bob-22")
	b2 := s.dial()
	b2.register("bob2", "tok-bob-22", "echo-message")
	s.llm.Enqueue(llmtest.Text("Hello bob"))
	b1.send("PRIVMSG agentik :hi, bob here")
	b1.answer("bob", "Hello bob")
	lines := b2.until(is("PRIVMSG", "bob2", "Hello bob"))
	if m := lines[0]; !strings.HasPrefix(m.Source, "bob2!") || m.Params[0] != "agentik" || m.Params[1] != "hi, bob here" {
		t.Fatalf("bob's other client (echo-message) sees his message as its own: %v", lines)
	}
	a.send("PRIVMSG nobody :x")
	if m := a.next(); m.Command != errNoSuchNick {
		t.Fatalf("%v", m)
	}
	a.send("PRIVMSG alice2 :x")
	if m := a.next(); m.Command != errCannotSendToChan {
		t.Fatalf("%v", m)
	}
}

func TestSeveralClientsOfOnePrincipalShareAChannel(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	s.llm.Enqueue(llmtest.Text("The answer"))
	a := s.dial()
	a.register("alice", "tok-alice-1")
	a.join("#team")
	a2 := s.dial()
	a2.register("alice_phone", "tok-alice-1")
	if p := params(a2.join("#team"), rplNamReply); !strings.Contains(p[0][3], "alice") || !strings.Contains(p[0][3], "alice_phone") {
		t.Fatalf("names %v", p)
	}
	if m := a.next(); m.Command != "JOIN" || !strings.HasPrefix(m.Source, "alice_phone!") {
		t.Fatalf("first client did not see the join: %v", m)
	}
	a.send("PRIVMSG #team :what is it?")
	a.answer("#team", "The answer")
	texts, others := a2.answer("#team", "The answer")
	if len(texts) != 1 {
		t.Fatalf("%v", texts)
	}
	var seen bool
	for _, m := range others {
		if m.Command == "PRIVMSG" && strings.HasPrefix(m.Source, "alice!") && m.Params[1] == "what is it?" {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("second client did not see the question: %v", others)
	}
	a2.send("QUIT")
	a2.waitClosed()
	if m := a.next(); m.Command != "QUIT" || !strings.HasPrefix(m.Source, "alice_phone!") {
		t.Fatalf("%v", m)
	}
}

func TestDeletedConversationKicksTheClient(t *testing.T) {
	s := newStack(t, Options{}, nil)
	a := s.dial()
	a.register("alice", "")
	a.join("#doomed")
	id := s.conversations("")[0].ID
	if err := s.eng.DeleteConversation(testCtx(t), id); err != nil {
		t.Fatal(err)
	}
	m := a.until(is("KICK"))
	if k := m[len(m)-1]; k.Params[0] != "#doomed" || k.Params[1] != "alice" {
		t.Fatalf("%v", k)
	}
	a.send("PRIVMSG #doomed :still there?")
	if m := a.next(); m.Command != errCannotSendToChan {
		t.Fatalf("%v", m)
	}
}

func TestWhoWhoisModeNames(t *testing.T) {
	s := newStack(t, Options{}, nil)
	a := s.dial()
	a.register("alice", "")
	a.join("#w")
	a.send("WHO #w")
	who := a.until(is(rplEndOfWho))
	if p := params(who, rplWhoReply); len(p) != 2 || p[0][5] != "agentik" || p[0][6] != "H@B" || p[1][5] != "alice" {
		t.Fatalf("WHO %v", who)
	}
	a.send("WHOIS agentik")
	whois := a.until(is(rplEndOfWhois))
	if len(params(whois, rplWhoisBot)) != 1 {
		t.Fatalf("WHOIS %v", whois)
	}
	a.send("MODE #w")
	if m := a.next(); m.Command != rplChannelModeIs {
		t.Fatalf("%v", m)
	}
	a.next() // 329
	a.send("MODE #w b")
	if m := a.next(); m.Command != rplEndOfBanList {
		t.Fatalf("%v", m)
	}
	a.send("MODE #w +o alice")
	if m := a.next(); m.Command != errChanOPrivsNeeded {
		t.Fatalf("%v", m)
	}
	a.send("MODE alice +i")
	if m := a.next(); m.Command != rplUModeIs {
		t.Fatalf("%v", m)
	}
	a.send("NAMES #w")
	if ls := a.until(is(rplEndOfNames)); len(params(ls, rplNamReply)) != 1 {
		t.Fatalf("%v", ls)
	}
	a.send("NICK alicia")
	if m := a.next(); m.Command != "NICK" || m.Params[0] != "alicia" || !strings.HasPrefix(m.Source, "alice!") {
		t.Fatalf("%v", m)
	}
	a.send("USERHOST agentik alicia")
	if m := a.next(); m.Command != rplUserHost || !strings.Contains(m.Params[1], "agentik=+agentik@") {
		t.Fatalf("%v", m)
	}
	var _ ircmsg.Message
}

// A rename made elsewhere reaches the channel as a TOPIC change; a TOPIC
// set by one client reaches the principal's other clients, and its own
// client once.
func TestRenamesReachEveryClientOfThePrincipal(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	a := s.dial()
	a.register("alice", "tok-alice-1")
	a.join("#r")
	a2 := s.dial()
	a2.register("alice2", "tok-alice-1")
	a2.join("#r")
	a.until(is("JOIN")) // alice2 joined
	id := s.conversations("alice")[0].ID
	if _, err := s.eng.RenameConversation(agentik.WithPrincipal(testCtx(t), "alice"), id, "Renamed on the web"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{a, a2} {
		if m := c.until(is("TOPIC")); m[len(m)-1].Params[1] != "Renamed on the web" || m[len(m)-1].Nick() != "agentik" {
			t.Fatalf("%v", m)
		}
	}
	a.send("TOPIC #r :Set by alice")
	if m := a.next(); m.Command != "TOPIC" || m.Nick() != "alice" || m.Params[1] != "Set by alice" {
		t.Fatalf("%v", m)
	}
	if m := a2.until(is("TOPIC")); m[len(m)-1].Params[1] != "Set by alice" {
		t.Fatalf("%v", m)
	}
	// alice's own client got its TOPIC once: the next line is the PONG.
	a.send("PING :x")
	if m := a.next(); m.Command != "PONG" {
		t.Fatalf("TOPIC twice: %v", m)
	}
	// bob, in a channel of the same name, hears nothing of it.
	b := s.dial()
	b.register("bob", "tok-bob-22")
	b.join("#r")
	if _, err := s.eng.RenameConversation(agentik.WithPrincipal(testCtx(t), "alice"), id, "Again"); err != nil {
		t.Fatal(err)
	}
	a.until(is("TOPIC"))
	b.send("PING :y")
	if m := b.next(); m.Command != "PONG" {
		t.Fatalf("bob saw %v", m)
	}
}
