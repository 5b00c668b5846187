package storetest

import (
	"slices"
	"testing"

	"github.com/agentik/agentik"
)

func testCreateGet(t *testing.T, s agentik.Store) {
	before := lastAgentCursor(t, s)
	c := agentik.ConversationRecord{
		ID: agentik.NewID(), Owner: newOwner(), Title: "Привет, 世界 🌍",
		Temporal: true, CreatedAt: at(0), UpdatedAt: at(5),
	}
	ev := numbered(t, s, before, create(t, s, c))
	if ev.Cursor <= before {
		t.Fatalf("created cursor %d, want > %d", ev.Cursor, before)
	}
	if ev.Type != agentik.AgentEvCreated || ev.Conversation == nil || ev.Conversation.ID != c.ID ||
		ev.Conversation.Title != c.Title || ev.Owner != c.Owner || ev.Conversation.Owner != c.Owner {
		t.Fatalf("created event = %s", dump(ev))
	}
	equal(t, "GetConversation", getConv(t, s, c.ID), c)
	equal(t, "stored created event", agentEventsOf(t, s, before, c.ID), []agentik.AgentEvent{ev})
	if got := lastAgentCursor(t, s); got < ev.Cursor {
		t.Fatalf("LastAgentCursor = %d, want >= %d", got, ev.Cursor)
	}
}

func testCreateDuplicate(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	before := lastAgentCursor(t, s)
	dup := c
	dup.Title = "other"
	_, err := s.CreateConversation(t.Context(), dup)
	wantCode(t, err, agentik.EConflict)
	equal(t, "conversation after duplicate create", getConv(t, s, c.ID), c)
	if evs := agentEventsOf(t, s, before, c.ID); len(evs) != 0 {
		t.Fatalf("duplicate create stored agent events %s", dump(evs))
	}
}

func testGetUnknown(t *testing.T, s agentik.Store) {
	_, err := s.GetConversation(t.Context(), agentik.NewID())
	wantCode(t, err, agentik.ENotFound)
}

func testListOrderAndOwner(t *testing.T, s agentik.Store) {
	owner, other := newOwner(), newOwner()
	// Three share updated_at: ties are broken by id, descending.
	var mine []agentik.ConversationRecord
	for _, u := range []int{3, 1, 7, 3, 5, 3} {
		c := record(owner, "c", at(0), at(u))
		create(t, s, c)
		mine = append(mine, c)
	}
	theirs := record(other, "theirs", at(0), at(100))
	create(t, s, theirs)

	want := slices.Clone(mine)
	sortNewestFirst(want)
	got, next, err := s.ListConversations(t.Context(), owner, 100, "")
	if err != nil {
		t.Fatalf("ListConversations: %v", err)
	}
	equal(t, "list", got, want)
	if next != "" {
		t.Fatalf("next = %q on the only page", next)
	}

	got, _, err = s.ListConversations(t.Context(), other, 100, "")
	if err != nil {
		t.Fatalf("ListConversations: %v", err)
	}
	equal(t, "other owner's list", got, []agentik.ConversationRecord{theirs})

	got, next, err = s.ListConversations(t.Context(), newOwner(), 10, "")
	if err != nil || len(got) != 0 || next != "" {
		t.Fatalf("unknown owner: %v, %q, %v", got, next, err)
	}

	// A touch moves a conversation to the top.
	oldest := want[len(want)-1]
	commit(t, s, agentik.Write{ConversationID: oldest.ID, Touch: at(50)})
	got, _, err = s.ListConversations(t.Context(), owner, 1, "")
	if err != nil || len(got) != 1 || got[0].ID != oldest.ID || !got[0].UpdatedAt.Equal(at(50).Time) {
		t.Fatalf("after touch, top = %s, %v; want %s at %s", dump(got), err, oldest.ID, at(50))
	}
}

// sortNewestFirst orders as ListConversations does.
func sortNewestFirst(cs []agentik.ConversationRecord) {
	slices.SortFunc(cs, func(a, b agentik.ConversationRecord) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt.Time); c != 0 {
			return c
		}
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
}

func testListPaging(t *testing.T, s agentik.Store) {
	owner := newOwner()
	var want []agentik.ConversationRecord
	for i := range 11 {
		c := record(owner, "c", at(0), at(i/3)) // groups of ties across page borders
		create(t, s, c)
		want = append(want, c)
	}
	sortNewestFirst(want)

	var got []agentik.ConversationRecord
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("paging does not end")
		}
		page, next, err := s.ListConversations(t.Context(), owner, 4, token)
		if err != nil {
			t.Fatalf("ListConversations(%q): %v", token, err)
		}
		if len(page) > 4 {
			t.Fatalf("page of %d, limit 4", len(page))
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		last := page[len(page)-1]
		if next != agentik.ListToken(last.UpdatedAt, last.ID) {
			t.Fatalf("next token %q is not ListToken of the page's last conversation", next)
		}
		token = next
	}
	equal(t, "all pages", got, want) // no duplicates, no gaps

	// A page that exactly fills the rest says there is no next page.
	page, next, err := s.ListConversations(t.Context(), owner, 11, "")
	if err != nil || len(page) != 11 || next != "" {
		t.Fatalf("full page: %d conversations, next %q, %v", len(page), next, err)
	}
	// A token that is not from this list still pages by position.
	page, _, err = s.ListConversations(t.Context(), owner, 100, agentik.ListToken(at(2), want[0].ID))
	if err != nil {
		t.Fatalf("ListConversations: %v", err)
	}
	var wantBelow []agentik.ConversationRecord
	for _, c := range want {
		if c.UpdatedAt.Before(at(2).Time) || (c.UpdatedAt.Equal(at(2).Time) && c.ID < want[0].ID) {
			wantBelow = append(wantBelow, c)
		}
	}
	equal(t, "page below a foreign token", page, wantBelow)
}

func testListBadToken(t *testing.T, s agentik.Store) {
	_, _, err := s.ListConversations(t.Context(), newOwner(), 10, "not a token!")
	wantCode(t, err, agentik.EInvalid)
}

func testRename(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	before := lastAgentCursor(t, s)
	got, ev, err := s.RenameConversation(t.Context(), c.ID, "new title", at(30))
	if err != nil {
		t.Fatalf("RenameConversation: %v", err)
	}
	ev = numbered(t, s, before, ev)
	want := c
	want.Title = "new title" // updated_at is not changed: the renamed event does not carry it
	equal(t, "renamed record", got, want)
	equal(t, "stored record", getConv(t, s, c.ID), want)
	if ev.Cursor <= before || ev.Type != agentik.AgentEvRenamed || ev.ConversationID != c.ID ||
		ev.Title != "new title" || ev.Owner != c.Owner || !ev.Date.Equal(at(30).Time) {
		t.Fatalf("renamed event = %s", dump(ev))
	}
	equal(t, "stored renamed event", agentEventsOf(t, s, before, c.ID), []agentik.AgentEvent{ev})

	_, _, err = s.RenameConversation(t.Context(), agentik.NewID(), "x", at(31))
	wantCode(t, err, agentik.ENotFound)
}

func testDelete(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	keep := newConversation(t, s)
	before := lastAgentCursor(t, s)
	ev, err := s.DeleteConversation(t.Context(), c.ID, at(40))
	if err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	ev = numbered(t, s, before, ev)
	if ev.Cursor <= before || ev.Type != agentik.AgentEvDeleted || ev.ConversationID != c.ID ||
		ev.Owner != c.Owner || !ev.Date.Equal(at(40).Time) {
		t.Fatalf("deleted event = %s", dump(ev))
	}
	equal(t, "stored deleted event", agentEventsOf(t, s, before, c.ID), []agentik.AgentEvent{ev})

	ctx := t.Context()
	_, err = s.GetConversation(ctx, c.ID)
	wantCode(t, err, agentik.ENotFound)
	_, err = s.DeleteConversation(ctx, c.ID, at(41))
	wantCode(t, err, agentik.ENotFound)
	_, _, err = s.RenameConversation(ctx, c.ID, "x", at(41))
	wantCode(t, err, agentik.ENotFound)
	_, _, err = s.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, "hi"))})
	wantCode(t, err, agentik.ENotFound)
	_, _, err = s.Messages(ctx, c.ID, agentik.MessagesRequest{})
	wantCode(t, err, agentik.ENotFound)
	_, err = s.Events(ctx, c.ID, 0, 0)
	wantCode(t, err, agentik.ENotFound)
	_, err = s.LastCursor(ctx, c.ID)
	wantCode(t, err, agentik.ENotFound)
	_, err = s.Memory(ctx, c.ID)
	wantCode(t, err, agentik.ENotFound)
	list, _, err := s.ListConversations(ctx, c.Owner, 10, "")
	if err != nil || len(list) != 0 {
		t.Fatalf("list after delete: %s, %v", dump(list), err)
	}
	if evs := agentEventsOf(t, s, before, keep.ID); len(evs) != 0 {
		t.Fatalf("delete touched another conversation: %s", dump(evs))
	}
	equal(t, "other conversation", getConv(t, s, keep.ID), keep)
	_, err = s.DeleteConversation(ctx, agentik.NewID(), at(42))
	wantCode(t, err, agentik.ENotFound)
}

func testDeleteCascade(t *testing.T, s agentik.Store) {
	ctx := t.Context()
	c := newConversation(t, s)
	keep := newConversation(t, s)
	u := userMsg(c.ID, "open turn")
	a := reply(c.ID, agentik.MsgToolCall, u.ID)
	commit(t, s, agentik.Write{
		ConversationID: c.ID, Events: events(u, a),
		Memory: []agentik.MemoryEntry{{SourceID: u.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: u.Content}}},
	})
	ku := userMsg(keep.ID, "kept")
	kevs, _ := commit(t, s, agentik.Write{ConversationID: keep.ID, Events: events(ku),
		Memory: []agentik.MemoryEntry{{Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: ku.Content}}}})

	if _, err := s.DeleteConversation(ctx, c.ID, at(1)); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	_, err := s.Message(ctx, c.ID, u.ID)
	wantCode(t, err, agentik.ENotFound)
	turns, err := s.OpenTurns(ctx)
	if err != nil {
		t.Fatalf("OpenTurns: %v", err)
	}
	for _, m := range turns {
		if m.ConversationID == c.ID {
			t.Fatalf("open turn of a deleted conversation: %s", dump(m))
		}
	}
	// The deleted journal is really gone: its message ids can be used again.
	c2 := newConversation(t, s)
	u2, a2 := *u, *a
	u2.ConversationID, a2.ConversationID = c2.ID, c2.ID
	u2.Seq, a2.Seq = 0, 0
	commit(t, s, agentik.Write{ConversationID: c2.ID, Events: events(&u2, &a2)})

	equal(t, "kept journal", allMessages(t, s, keep.ID), []agentik.Message{*ku})
	equal(t, "kept events", allEvents(t, s, keep.ID), kevs)
	if m := memory(t, s, keep.ID); len(m) != 1 {
		t.Fatalf("kept memory = %s", dump(m))
	}
}
