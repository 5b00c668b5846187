package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentik/agentik"
)

func testCommitSeqsAndCursors(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	other := newConversation(t, s)

	u := userMsg(c.ID, "hello")
	call := reply(c.ID, agentik.MsgToolCall, u.ID)
	ans := reply(c.ID, agentik.MsgAssistant, u.ID)
	first, _ := commit(t, s, agentik.Write{ConversationID: c.ID, Events: append(events(u, call),
		interrupted(c.ID, u.ID))})
	second, _ := commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(ans)})

	// Seqs are written back into the caller's messages.
	for i, m := range []*agentik.Message{u, call, ans} {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d, want %d", i, m.Seq, i+1)
		}
	}
	if first[0].Message != u || first[1].Message != call || second[0].Message != ans {
		t.Fatalf("returned events do not carry the caller's messages")
	}
	all := append(first, second...)
	strictlyIncreasing(t, "commit", cursors(all), 0)
	for _, ev := range all {
		if ev.ConversationID != c.ID {
			t.Fatalf("event %s has conversation %q", ev.Type, ev.ConversationID)
		}
	}
	equal(t, "journal", allMessages(t, s, c.ID), []agentik.Message{*u, *call, *ans})
	equal(t, "events", allEvents(t, s, c.ID), all)

	// Seqs are per conversation; cursors are global.
	o := userMsg(other.ID, "elsewhere")
	oevs, _ := commit(t, s, agentik.Write{ConversationID: other.ID, Events: events(o)})
	if o.Seq != 1 {
		t.Fatalf("other conversation starts at seq %d", o.Seq)
	}
	strictlyIncreasing(t, "cursors across conversations", cursors(oevs), all[len(all)-1].Cursor)
}

func testCommitEmpty(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	evs, aev, err := s.Commit(t.Context(), agentik.Write{ConversationID: c.ID})
	if err != nil || len(evs) != 0 || aev != nil {
		t.Fatalf("empty commit: %v, %v, %v", evs, aev, err)
	}
	equal(t, "conversation", getConv(t, s, c.ID), c)
}

func testCursorsNeverReused(t *testing.T, s agentik.Store) {
	a := newConversation(t, s)
	evs, _ := commit(t, s, agentik.Write{ConversationID: a.ID, Events: events(userMsg(a.ID, "1"), userMsg(a.ID, "2"))})
	maxA := evs[len(evs)-1].Cursor
	before := lastAgentCursor(t, s)
	del, err := s.DeleteConversation(t.Context(), a.ID, at(1))
	if err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	del = numbered(t, s, before, del)
	b := newConversation(t, s)
	evs, _ = commit(t, s, agentik.Write{ConversationID: b.ID, Events: events(userMsg(b.ID, "3"))})
	if evs[0].Cursor <= maxA {
		t.Fatalf("cursor %d after delete, want > %d (reused)", evs[0].Cursor, maxA)
	}
	if last := lastAgentCursor(t, s); last <= del.Cursor {
		t.Fatalf("agent cursor %d after create, want > deleted's %d", last, del.Cursor)
	}
}

func testTouch(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	before := lastAgentCursor(t, s)
	_, aev := commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, "hi")), Touch: at(60)})
	if aev == nil {
		t.Fatalf("no touched event")
	}
	*aev = numbered(t, s, before, *aev)
	if aev.Cursor <= before || aev.Type != agentik.AgentEvTouched || aev.ConversationID != c.ID ||
		!aev.UpdatedAt.Equal(at(60).Time) || aev.Owner != c.Owner {
		t.Fatalf("touched event = %s", dump(aev))
	}
	equal(t, "stored touched event", agentEventsOf(t, s, before, c.ID), []agentik.AgentEvent{*aev})
	want := c
	want.UpdatedAt = at(60)
	want.Head = 1 // the message appended is the head
	equal(t, "touched conversation", getConv(t, s, c.ID), want)

	// Without Touch nothing about updated_at changes and no agent event is made.
	_, aev = commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, "again"))})
	if aev != nil {
		t.Fatalf("agent event without Touch: %s", dump(aev))
	}
	want.Head = 2
	equal(t, "untouched conversation", getConv(t, s, c.ID), want)
}

func testTokens(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	commit(t, s, agentik.Write{ConversationID: c.ID, Tokens: agentik.TurnTokens{Input: 10, Output: 20}})
	commit(t, s, agentik.Write{ConversationID: c.ID, Tokens: agentik.TurnTokens{Input: 1, Output: 2}})
	if got := getConv(t, s, c.ID).Tokens; got != (agentik.TurnTokens{Input: 11, Output: 22}) {
		t.Fatalf("tokens = %+v, want {11 22}", got)
	}
	// A conversation created with totals keeps them.
	d := record(newOwner(), "t", at(0), at(0))
	d.Tokens = agentik.TurnTokens{Input: 5, Output: 6}
	create(t, s, d)
	equal(t, "created with tokens", getConv(t, s, d.ID), d)
}

func entry(role, text string) agentik.MemoryEntry {
	return agentik.MemoryEntry{Message: agentik.ModelMessage{Role: role, Content: []agentik.Content{agentik.Text(text)}}}
}

func testMemory(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	if m := memory(t, s, c.ID); len(m) != 0 {
		t.Fatalf("new conversation has memory %s", dump(m))
	}
	call := agentik.ModelMessage{Role: agentik.RoleAssistant, Reasoning: "think",
		Content:   []agentik.Content{agentik.Text("let me check")},
		ToolCalls: []agentik.ToolCall{{ID: "call_1", Name: "current_time", Arguments: agentik.RawJSON(`{"timezone":"Europe/Paris"}`)}}}
	first := []agentik.MemoryEntry{
		{SourceID: agentik.NewID(), Message: agentik.ModelMessage{Role: agentik.RoleUser,
			Content: []agentik.Content{agentik.Text("a"), agentik.Image("image/png", []byte{0x89, 'P', 'N', 'G'})}}},
		{SourceID: agentik.NewID(), ReplyTo: agentik.NewID(), Message: call},
		{Message: agentik.ModelMessage{Role: agentik.RoleTool, CallID: "call_1", Name: "current_time", IsError: true,
			Content: []agentik.Content{agentik.Text("c")}}},
	}
	commit(t, s, agentik.Write{ConversationID: c.ID, Memory: first})
	got := memory(t, s, c.ID)
	if len(got) != 3 {
		t.Fatalf("memory = %s", dump(got))
	}
	strictlyIncreasing(t, "memory order", orders(got), 0)
	for i := range got {
		want := first[i]
		want.Order = got[i].Order
		equal(t, "memory entry", got[i], want)
	}

	// Drop through the second entry, then append: the drop applies first and
	// new entries come after every order handed out before.
	commit(t, s, agentik.Write{ConversationID: c.ID, DropMemoryThrough: got[1].Order,
		Memory: []agentik.MemoryEntry{entry(agentik.RoleSummary, "d"), entry(agentik.RoleUser, "e")}})
	after := memory(t, s, c.ID)
	if texts(after) != "cde" {
		t.Fatalf("memory after drop = %q, want cde", texts(after))
	}
	strictlyIncreasing(t, "memory order after drop", orders(after), got[1].Order)
	if after[0].Order != got[2].Order {
		t.Fatalf("kept entry changed order %d -> %d", got[2].Order, after[0].Order)
	}
	// Dropping everything, then appending, never reuses an order.
	commit(t, s, agentik.Write{ConversationID: c.ID, DropMemoryThrough: after[2].Order})
	if m := memory(t, s, c.ID); len(m) != 0 {
		t.Fatalf("memory after dropping all = %s", dump(m))
	}
	commit(t, s, agentik.Write{ConversationID: c.ID, Memory: []agentik.MemoryEntry{entry(agentik.RoleUser, "f")}})
	last := memory(t, s, c.ID)
	if texts(last) != "f" || last[0].Order <= after[2].Order {
		t.Fatalf("memory = %s, want f with order > %d", dump(last), after[2].Order)
	}
	// DropMemoryThrough 0 removes nothing.
	commit(t, s, agentik.Write{ConversationID: c.ID, Memory: []agentik.MemoryEntry{entry(agentik.RoleUser, "g")}})
	if got := texts(memory(t, s, c.ID)); got != "fg" {
		t.Fatalf("memory = %q, want fg", got)
	}
	_, err := s.Memory(t.Context(), agentik.NewID())
	wantCode(t, err, agentik.ENotFound)
}

func testFailedCommitUnknown(t *testing.T, s agentik.Store) {
	before := lastAgentCursor(t, s)
	id := agentik.NewID()
	m := userMsg(id, "lost")
	_, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: id, Events: events(m), Touch: at(1),
		Memory: []agentik.MemoryEntry{entry(agentik.RoleUser, "x")}})
	wantCode(t, err, agentik.ENotFound)
	if m.Seq != 0 {
		t.Fatalf("failed commit wrote seq %d into the message", m.Seq)
	}
	if evs := agentEventsOf(t, s, before, id); len(evs) != 0 {
		t.Fatalf("failed commit made agent events %s", dump(evs))
	}
	turns, err := s.OpenTurns(t.Context())
	if err != nil {
		t.Fatalf("OpenTurns: %v", err)
	}
	for _, tm := range turns {
		if tm.ID == m.ID {
			t.Fatalf("failed commit stored its message")
		}
	}
}

// testFailedCommitChangesNothing makes the second message of a write collide
// with the first (same id): the whole write, already partly applied inside
// the transaction, must vanish.
func testFailedCommitChangesNothing(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	mem := []agentik.MemoryEntry{entry(agentik.RoleUser, "kept")}
	commit(t, s, agentik.Write{ConversationID: c.ID, Memory: mem})
	memBefore := memory(t, s, c.ID)
	before := lastAgentCursor(t, s)

	u := userMsg(c.ID, "first")
	dup := *u
	_, _, err := s.Commit(t.Context(), agentik.Write{
		ConversationID:    c.ID,
		Events:            events(u, &dup),
		Memory:            []agentik.MemoryEntry{entry(agentik.RoleUser, "lost")},
		DropMemoryThrough: memBefore[0].Order,
		Touch:             at(90),
		Tokens:            agentik.TurnTokens{Input: 100, Output: 100},
	})
	if err == nil {
		t.Fatalf("commit of a duplicate message id succeeded")
	}
	if u.Seq != 0 || dup.Seq != 0 {
		t.Fatalf("failed commit wrote seqs %d, %d", u.Seq, dup.Seq)
	}
	equal(t, "conversation", getConv(t, s, c.ID), c)
	if msgs := allMessages(t, s, c.ID); len(msgs) != 0 {
		t.Fatalf("journal after failed commit: %s", dump(msgs))
	}
	if evs := allEvents(t, s, c.ID); len(evs) != 0 {
		t.Fatalf("events after failed commit: %s", dump(evs))
	}
	equal(t, "memory", memory(t, s, c.ID), memBefore)
	if evs := agentEventsOf(t, s, before, c.ID); len(evs) != 0 {
		t.Fatalf("agent events after failed commit: %s", dump(evs))
	}
	_, err = s.Message(t.Context(), c.ID, u.ID)
	wantCode(t, err, agentik.ENotFound)

	// No seq was consumed.
	next := userMsg(c.ID, "next")
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(next)})
	if next.Seq != 1 {
		t.Fatalf("seq after failed commit = %d, want 1", next.Seq)
	}
}

func testInvalidCommit(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	bad := map[string]agentik.Write{
		"online event": {ConversationID: c.ID, Events: []agentik.Event{{Type: agentik.EvAppendText, Text: "x"}}},
		"journal event without message": {ConversationID: c.ID,
			Events: []agentik.Event{{Type: agentik.EvUserMessage, Date: at(1)}}},
		"message without id": {ConversationID: c.ID,
			Events: events(&agentik.Message{Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("x")}})},
		"other conversation's event": {ConversationID: c.ID,
			Events: events(userMsg(c.ID, "ok"), userMsg(agentik.NewID(), "x"))},
	}
	for name, w := range bad {
		if _, _, err := s.Commit(t.Context(), w); err == nil {
			t.Errorf("%s: commit succeeded", name)
		} else if code := agentik.ErrorCode(err); code != agentik.EInvalid {
			t.Errorf("%s: code %q (%v), want %q", name, code, err, agentik.EInvalid)
		}
	}
	if msgs := allMessages(t, s, c.ID); len(msgs) != 0 {
		t.Fatalf("invalid commits stored %s", dump(msgs))
	}
}

// testNoAliasing: the store keeps its own copies. Changing what was passed
// in, or what was returned, changes nothing stored.
func testNoAliasing(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	u := userMsg(c.ID, "original")
	u.Context = &agentik.MessageContext{Metadata: map[string]string{"k": "v"}}
	mem := []agentik.MemoryEntry{entry(agentik.RoleUser, "original")}
	evs := events(u)
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: evs, Memory: mem})
	want := *u
	want.Content = []agentik.Content{agentik.Text("original")}
	want.Context = &agentik.MessageContext{Metadata: map[string]string{"k": "v"}}

	u.Content[0].Text = "changed by the caller"
	u.Context.Metadata["k"] = "changed"
	mem[0].Message.Content[0].Text = "changed"
	got := allMessages(t, s, c.ID)
	equal(t, "journal after the caller changed its message", got, []agentik.Message{want})

	got[0].Content[0].Text = "changed by a reader"
	got[0].Context.Metadata["k"] = "changed"
	stored := allEvents(t, s, c.ID)
	stored[0].Message.Content[0].Text = "changed by a reader"
	m, err := s.Message(t.Context(), c.ID, u.ID)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	equal(t, "message after readers changed theirs", m, want)
	equal(t, "event message after readers changed theirs", *allEvents(t, s, c.ID)[0].Message, want)
	if texts(memory(t, s, c.ID)) != "original" {
		t.Fatalf("memory changed through the caller's slice")
	}
}

// testCancelled: a commit on a cancelled context fails with the context's
// error and stores nothing.
func testCancelled(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := userMsg(c.ID, "too late")
	_, _, err := s.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: events(m), Touch: at(9)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("commit on a cancelled context: %v, want context.Canceled", err)
	}
	if msgs := allMessages(t, s, c.ID); len(msgs) != 0 || m.Seq != 0 {
		t.Fatalf("cancelled commit stored %s (seq %d)", dump(msgs), m.Seq)
	}
	equal(t, "conversation", getConv(t, s, c.ID), c)
}
