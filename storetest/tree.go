package storetest

import (
	"testing"

	"github.com/agentik/agentik"
)

// The message tree (SPEC §18): parents, the head, head moves, reopened
// turns and the reads of the head path.

// pathOf pages the head path (branch "") or every message (BranchAll)
// with limit, ascending.
func pathOf(t *testing.T, s agentik.Store, conv, branch string, limit int) []agentik.Message {
	t.Helper()
	var out []agentik.Message
	var after int64
	for {
		page, more, err := s.Messages(t.Context(), conv, agentik.MessagesRequest{After: after, Limit: limit, Branch: branch})
		if err != nil {
			t.Fatalf("Messages: %v", err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		after = page[len(page)-1].Seq
	}
}

// testTree builds user 1, answer 2, user 3, answer 4; edits 3 (a detached
// user 5 after 2, answered by 6); moves the head; and checks parents,
// siblings, the head, the head path read forward, backward and by Path,
// and that every message stays in the journal.
func testTree(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	u1 := userMsg(c.ID, "one")
	a2 := reply(c.ID, agentik.MsgAssistant, u1.ID)
	u3 := userMsg(c.ID, "three")
	a4 := reply(c.ID, agentik.MsgAssistant, u3.ID)
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u1, a2)})
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u3, a4)})
	if u1.Parent != 0 || a2.Parent != 1 || u3.Parent != 2 || a4.Parent != 3 {
		t.Fatalf("parents %d %d %d %d, want 0 1 2 3", u1.Parent, a2.Parent, u3.Parent, a4.Parent)
	}
	if h := getConv(t, s, c.ID).Head; h != 4 {
		t.Fatalf("head %d, want 4", h)
	}

	// An edit of 3: detached after 2; the head stays.
	u5 := userMsg(c.ID, "three, edited")
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u5), Detached: true, Parent: 2})
	if u5.Seq != 5 || u5.Parent != 2 {
		t.Fatalf("edit seq %d parent %d, want 5 after 2", u5.Seq, u5.Parent)
	}
	equal(t, "head path after a detached write", seqs(pathOf(t, s, c.ID, "", 50)), []int64{1, 2, 3, 4})

	// Its turn moves the head there and answers.
	a6 := reply(c.ID, agentik.MsgAssistant, u5.ID)
	evs, _ := commit(t, s, agentik.Write{ConversationID: c.ID, Events: append(
		[]agentik.Event{{ConversationID: c.ID, Date: agentik.Now(), Type: agentik.EvHeadMoved, To: 5}}, events(a6)...)})
	if evs[0].From != 4 || evs[0].To != 5 || evs[0].Cursor == 0 {
		t.Fatalf("head_moved = %s, want from 4 to 5 with a cursor", dump(evs[0]))
	}
	if a6.Parent != 5 {
		t.Fatalf("answer's parent %d, want 5", a6.Parent)
	}
	if h := getConv(t, s, c.ID).Head; h != 6 {
		t.Fatalf("head %d, want 6", h)
	}
	checkTreeReads(t, s, c.ID)

	// Back to the first branch: an event, nothing deleted.
	evs, _ = commit(t, s, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{
		{ConversationID: c.ID, Date: agentik.Now(), Type: agentik.EvHeadMoved, To: 4}}})
	if evs[0].From != 6 {
		t.Fatalf("head_moved from %d, want 6", evs[0].From)
	}
	equal(t, "head path after the switch", seqs(pathOf(t, s, c.ID, "", 50)), []int64{1, 2, 3, 4})
	all := allEvents(t, s, c.ID)
	if n := len(all); n != 8 { // six messages, two head moves
		t.Fatalf("%d events, want 8", n)
	}
	if last := all[len(all)-1]; last.Type != agentik.EvHeadMoved || last.From != 6 || last.To != 4 {
		t.Fatalf("stored head_moved = %s", dump(last))
	}
	// A message read by id carries its parent.
	m, err := s.Message(t.Context(), c.ID, a6.ID)
	if err != nil || m.Parent != 5 {
		t.Fatalf("Message: parent %d, err %v", m.Parent, err)
	}
}

// checkTreeReads reads the tree testTree built (head path 1 2 5 6, 3 and
// 5 siblings) every way.
func checkTreeReads(t *testing.T, s agentik.Store, conv string) {
	c := struct{ ID string }{conv}
	for _, limit := range []int{1, 2, 50} {
		equal(t, "head path", seqs(pathOf(t, s, c.ID, "", limit)), []int64{1, 2, 5, 6})
		equal(t, "every message", seqs(pathOf(t, s, c.ID, agentik.BranchAll, limit)), seqRange(1, 6))
	}
	page, more, err := s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Before: 6, Limit: 2})
	if err != nil || !more {
		t.Fatalf("head path before 6: more %v, err %v", more, err)
	}
	equal(t, "head path before 6", seqs(page), []int64{2, 5})
	page, _, err = s.Messages(t.Context(), c.ID, agentik.MessagesRequest{After: 2})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "head path after 2", seqs(page), []int64{5, 6})
	for _, m := range page {
		if m.Seq == 5 {
			equal(t, "siblings of 5", m.Siblings, []int64{3, 5})
		} else if m.Siblings != nil {
			t.Fatalf("siblings of %d = %v, want none", m.Seq, m.Siblings)
		}
	}

	path, err := s.Path(t.Context(), c.ID, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "Path to 4", seqs(path), []int64{1, 2, 3, 4})
	path, err = s.Path(t.Context(), c.ID, -1, 2)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "Path of the head from 2", seqs(path), []int64{2, 5, 6})
	path, err = s.Path(t.Context(), c.ID, 99, 0)
	if err != nil || len(path) != 0 {
		t.Fatalf("Path to no message: %v, %v", seqs(path), err)
	}
	if _, err := s.Path(t.Context(), agentik.NewID(), -1, 0); !agentik.IsNotFound(err) {
		t.Fatalf("Path of an unknown conversation: %v, want not found", err)
	}
}

// testTreeRefusals: a head move or parent naming no message changes
// nothing; an unknown branch is invalid.
func testTreeRefusals(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, "one"))})
	before := allEvents(t, s, c.ID)
	bad := []agentik.Write{
		{ConversationID: c.ID, Events: []agentik.Event{{Type: agentik.EvHeadMoved, Date: agentik.Now(), To: 2}}},
		{ConversationID: c.ID, Events: []agentik.Event{{Type: agentik.EvHeadMoved, Date: agentik.Now(), To: -1}}},
		{ConversationID: c.ID, Events: events(userMsg(c.ID, "x")), Detached: true, Parent: 7},
	}
	for i, w := range bad {
		if _, _, err := s.Commit(t.Context(), w); !agentik.IsNotFound(err) {
			t.Fatalf("write %d: %v, want not found", i, err)
		}
	}
	if _, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: c.ID, Parent: 1}); err == nil {
		t.Fatalf("a parent without Detached was taken")
	}
	equal(t, "events after refused writes", allEvents(t, s, c.ID), before)
	if h := getConv(t, s, c.ID).Head; h != 1 {
		t.Fatalf("head %d after refused writes, want 1", h)
	}
	_, _, err := s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Branch: "other"})
	wantCode(t, err, agentik.EInvalid)
}

// testReopen: a reopened turn is open again until a later event closes it;
// ReplaceMemory swaps the whole working memory.
func testReopen(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	u := userMsg(c.ID, "one")
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u, reply(c.ID, agentik.MsgAssistant, u.ID)),
		Memory: []agentik.MemoryEntry{{SourceID: u.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser}}}})
	open, err := s.OpenTurnsOf(t.Context(), c.ID)
	if err != nil || len(open) != 0 {
		t.Fatalf("open turns %v, %v; want none", seqs(open), err)
	}
	commit(t, s, agentik.Write{ConversationID: c.ID, Reopen: u.ID, ReplaceMemory: true,
		Memory: []agentik.MemoryEntry{{SourceID: u.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text("rebuilt")}}}}})
	open, err = s.OpenTurnsOf(t.Context(), c.ID)
	if err != nil || len(open) != 1 || open[0].ID != u.ID {
		t.Fatalf("open turns %v, %v; want the reopened one", seqs(open), err)
	}
	if got := texts(memory(t, s, c.ID)); got != "rebuilt" {
		t.Fatalf("memory %q, want the replacement alone", got)
	}
	// Reopening what is no user message changes nothing.
	commit(t, s, agentik.Write{ConversationID: c.ID, Reopen: agentik.NewID()})
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(reply(c.ID, agentik.MsgAssistant, u.ID))})
	open, err = s.OpenTurnsOf(t.Context(), c.ID)
	if err != nil || len(open) != 0 {
		t.Fatalf("open turns %v, %v after the new answer; want none", seqs(open), err)
	}
}

// testManyBranches: a conversation whose head has 1,000 sibling
// branches appends at the head like one without: the next message follows
// the head and the head path is unchanged by the others.
func testManyBranches(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	u := userMsg(c.ID, "one")
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u)})
	const n = 1000
	for i := 0; i < n; i += 100 {
		// Each a child of 1: one write per message keeps them siblings.
		for range 100 {
			m := reply(c.ID, agentik.MsgAssistant, u.ID)
			commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(m), Detached: true, Parent: 1})
		}
	}
	next := reply(c.ID, agentik.MsgAssistant, u.ID)
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(next)})
	if next.Parent != 1 || next.Seq != n+2 {
		t.Fatalf("next seq %d parent %d, want %d after 1", next.Seq, next.Parent, n+2)
	}
	path := pathOf(t, s, c.ID, "", 50)
	equal(t, "head path", seqs(path), []int64{1, n + 2})
	if got := len(path[1].Siblings); got != n+1 {
		t.Fatalf("%d siblings, want %d", got, n+1)
	}
}
