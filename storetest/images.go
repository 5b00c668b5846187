package storetest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// Images returns distinct small images for tests: a PNG and a JPEG, each
// with a header the validator accepts and a body of its own from seed.
func Images(seed string) (png, jpeg []byte) {
	body := bytes.Repeat([]byte(seed), 64)
	png = append([]byte("\x89PNG\r\n\x1a\n"), body...)
	jpeg = append([]byte{0xff, 0xd8, 0xff, 0xe0}, body...)
	return png, jpeg
}

// testImages: images a store may keep apart from the rows that mention them
// come back exactly as written from every read, in and across
// conversations, and survive the deletion of another conversation that
// mentions the same image.
func testImages(t *testing.T, s agentik.Store) {
	ctx := t.Context()
	a := newConversation(t, s)
	b := newConversation(t, s)
	pngRaw, jpegRaw := Images(agentik.NewID())
	png := agentik.Image("image/png", pngRaw)
	jpeg := agentik.Image("image/jpeg", jpegRaw)
	// Base64 with a line break decodes to the same bytes but is another
	// text: it must come back as it was sent.
	wrapped := png
	wrapped.Data = png.Data[:40] + "\r\n" + png.Data[40:]
	// A tool may return an image part the validator would refuse.
	odd := agentik.Content{Type: agentik.ContentImage, MIME: "image/png", Data: "sha256:" + strings.Repeat("0", 64)}

	userA := &agentik.Message{ID: agentik.NewID(), ConversationID: a.ID, Date: at(1), Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("compare"), png, wrapped, jpeg, png, odd}}
	toolA := &agentik.Message{ID: agentik.NewID(), ConversationID: a.ID, Date: at(2), Type: agentik.MsgToolResult,
		CallID: "call_1", Name: "snap", ReplyTo: userA.ID, Content: []agentik.Content{jpeg}}
	memA := []agentik.MemoryEntry{
		{SourceID: userA.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: userA.Content}},
		{SourceID: toolA.ID, ReplyTo: userA.ID, Message: agentik.ModelMessage{Role: agentik.RoleTool, CallID: "call_1", Name: "snap", Content: toolA.Content}},
	}
	evsA, _ := commit(t, s, agentik.Write{ConversationID: a.ID, Events: events(userA, toolA), Memory: memA})

	userB := &agentik.Message{ID: agentik.NewID(), ConversationID: b.ID, Date: at(3), Type: agentik.MsgUser,
		Content: []agentik.Content{png, agentik.Text("same picture, other conversation")}}
	memB := []agentik.MemoryEntry{{SourceID: userB.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: userB.Content}}}
	evsB, _ := commit(t, s, agentik.Write{ConversationID: b.ID, Events: events(userB), Memory: memB})

	// The caller's values and the returned events are untouched.
	if userA.Content[1] != png || userA.Content[3] != jpeg || memA[0].Message.Content[2] != wrapped {
		t.Fatalf("Commit changed the caller's content: %s", dump(userA.Content))
	}
	equal(t, "returned event", evsA[0].Message.Content, userA.Content)

	check := func(when string, c agentik.ConversationRecord, msgs []agentik.Message, evs []agentik.Event, mem []agentik.MemoryEntry) {
		t.Helper()
		equal(t, when+": journal", allMessages(t, s, c.ID), msgs)
		for _, m := range msgs {
			got, err := s.Message(ctx, c.ID, m.ID)
			if err != nil {
				t.Fatalf("%s: Message: %v", when, err)
			}
			equal(t, when+": message", got, m)
		}
		// The newest page, read backwards.
		page, _, err := s.Messages(ctx, c.ID, agentik.MessagesRequest{Before: int64(len(msgs)) + 1, Limit: 1})
		if err != nil {
			t.Fatalf("%s: Messages before: %v", when, err)
		}
		equal(t, when+": newest page", page, msgs[len(msgs)-1:])
		equal(t, when+": events", allEvents(t, s, c.ID), evs)
		got, err := s.Events(ctx, c.ID, evs[0].Cursor, 0)
		if err != nil {
			t.Fatalf("%s: Events: %v", when, err)
		}
		equal(t, when+": events after the first", got, evs[1:])
		equal(t, when+": memory", memory(t, s, c.ID), mem)
		turns, err := s.OpenTurns(ctx)
		if err != nil {
			t.Fatalf("%s: OpenTurns: %v", when, err)
		}
		var open []agentik.Message
		for _, m := range turns {
			if m.ConversationID == c.ID {
				open = append(open, m)
			}
		}
		equal(t, when+": open turns", open, msgs[:1])
	}
	check("a", a, []agentik.Message{*userA, *toolA}, evsA, memA)
	check("b", b, []agentik.Message{*userB}, evsB, memB)

	if _, err := s.DeleteConversation(ctx, a.ID, at(4)); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	check("b after a was deleted", b, []agentik.Message{*userB}, evsB, memB)

	// The JPEG was only a's: written again after a's deletion, it is stored
	// again. The PNG, already b's, is written again for b.
	again := &agentik.Message{ID: agentik.NewID(), ConversationID: b.ID, Date: at(5), Type: agentik.MsgToolResult,
		CallID: "call_2", Name: "snap", ReplyTo: userB.ID, Content: []agentik.Content{jpeg, png}}
	memAgain := []agentik.MemoryEntry{{SourceID: again.ID, ReplyTo: userB.ID,
		Message: agentik.ModelMessage{Role: agentik.RoleTool, CallID: "call_2", Name: "snap", Content: again.Content}}}
	evsAgain, _ := commit(t, s, agentik.Write{ConversationID: b.ID, Events: events(again), Memory: memAgain})
	check("b written again", b, []agentik.Message{*userB, *again}, append(evsB, evsAgain...), append(memB, memAgain...))

	// Reading a deleted conversation with images is not found, as without.
	_, err := s.Memory(ctx, a.ID)
	wantCode(t, err, agentik.ENotFound)
}
