package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
	"github.com/agentik/agentik/storeutil"
)

// bigImage is a PNG of n bytes, distinct per call.
func bigImage(n int) []byte {
	png, _ := storetest.Images(agentik.NewID())
	return append(png, bytes.Repeat([]byte{7}, n-len(png))...)
}

// imageWrite is a user message with content, its event and a memory entry
// of the same content: the three rows that used to hold each image.
func imageWrite(conv string, content ...agentik.Content) (agentik.Write, *agentik.Message) {
	m := &agentik.Message{ID: agentik.NewID(), ConversationID: conv, Date: agentik.Now(), Type: agentik.MsgUser, Content: content}
	return agentik.Write{ConversationID: conv, Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now(),
		Memory: []agentik.MemoryEntry{{SourceID: m.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: content}}}}, m
}

// blobStats reads what the images tables hold: rows, bytes and references.
func blobStats(t *testing.T, db querier) (images, bytes, refs, links int64) {
	t.Helper()
	err := db.QueryRowContext(t.Context(), `SELECT COUNT(*), COALESCE(SUM(length(data)), 0), COALESCE(SUM(refs), 0),
		(SELECT COUNT(*) FROM conversation_images) FROM images`).Scan(&images, &bytes, &refs, &links)
	if err != nil {
		t.Fatalf("blob stats: %v", err)
	}
	return
}

// inlineRows counts the rows of messages, events and memory whose payload
// contains s.
func inlineRows(t *testing.T, db querier, s string) int64 {
	t.Helper()
	var n int64
	err := db.QueryRowContext(t.Context(), `SELECT
		(SELECT COUNT(*) FROM messages WHERE instr(payload, ?1) > 0) +
		(SELECT COUNT(*) FROM events WHERE instr(payload, ?1) > 0) +
		(SELECT COUNT(*) FROM memory WHERE instr(payload, ?1) > 0)`, s).Scan(&n)
	if err != nil {
		t.Fatalf("count inline rows: %v", err)
	}
	return n
}

// TestImagesStoredOnce: an image sent in two conversations, in the journal,
// the event and working memory of each, and twice in one message, is one
// row of the images table holding its bytes once; no payload holds its
// base64. Deleting the conversations releases it, the last one removes it.
func TestImagesStoredOnce(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	raw := bigImage(256 << 10)
	img := agentik.Image("image/png", raw)
	a, b := newConv(t, s), newConv(t, s)
	for _, conv := range []string{a.ID, a.ID, b.ID} {
		w, _ := imageWrite(conv, agentik.Text("look"), img, img)
		if _, _, err := s.Commit(ctx, w); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	if n, size, refs, links := blobStats(t, s.wc); n != 1 || size != int64(len(raw)) || refs != 2 || links != 2 {
		t.Fatalf("images: %d rows, %d bytes, %d refs, %d links; want 1, %d, 2, 2", n, size, refs, links, len(raw))
	}
	if n := inlineRows(t, s.wc, img.Data[:64]); n != 0 {
		t.Fatalf("%d rows hold the image's base64", n)
	}
	// Nine rows mention it, and all of them together are far smaller than
	// the image: none holds it in any form.
	var payloads int64
	if err := s.wc.QueryRowContext(ctx, `SELECT (SELECT SUM(length(payload)) FROM messages) +
		(SELECT SUM(length(payload)) FROM events) + (SELECT SUM(length(payload)) FROM memory)`).Scan(&payloads); err != nil {
		t.Fatal(err)
	}
	if payloads > int64(len(raw))/10 {
		t.Fatalf("payloads hold %d bytes for a %d-byte image", payloads, len(raw))
	}
	msgs, _, err := s.Messages(ctx, b.ID, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 1 || msgs[0].Content[1] != img || msgs[0].Content[2] != img {
		t.Fatalf("b's journal: %v", err)
	}

	if _, err := s.DeleteConversation(ctx, a.ID, agentik.Now()); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if n, _, refs, links := blobStats(t, s.wc); n != 1 || refs != 1 || links != 1 {
		t.Fatalf("after deleting a: %d images, %d refs, %d links; want 1, 1, 1", n, refs, links)
	}
	if mem, err := s.Memory(ctx, b.ID); err != nil || mem[0].Message.Content[1] != img {
		t.Fatalf("b's memory after deleting a: %v", err)
	}
	if _, err := s.DeleteConversation(ctx, b.ID, agentik.Now()); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if n, _, refs, links := blobStats(t, s.wc); n != 0 || refs != 0 || links != 0 {
		t.Fatalf("after deleting both: %d images, %d refs, %d links; want none", n, refs, links)
	}
}

// TestImagesFailedCommit: a commit that fails stores no image.
func TestImagesFailedCommit(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	c := newConv(t, s)
	img := agentik.Image("image/png", bigImage(4096))

	w, _ := imageWrite(agentik.NewID(), img)
	_, _, err := s.Commit(ctx, w)
	if agentik.ErrorCode(err) != agentik.ENotFound {
		t.Fatalf("commit to an unknown conversation: %v", err)
	}
	// A message id already in the journal fails the whole write, images last.
	w, m := imageWrite(c.ID, agentik.Text("first"))
	if _, _, err := s.Commit(ctx, w); err != nil {
		t.Fatal(err)
	}
	w, dup := imageWrite(c.ID, img)
	dup.ID = m.ID
	if _, _, err := s.Commit(ctx, w); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("commit of a duplicate id: %v", err)
	}
	if n, _, _, links := blobStats(t, s.wc); n != 0 || links != 0 {
		t.Fatalf("failed commits stored %d images, %d links", n, links)
	}
}

// TestImagesBeforeMigration: a database written before images were stored
// apart (schema version 1, image data inline in every row) opens, reads as
// it was, and takes new images stored once beside the old rows.
func TestImagesBeforeMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	ctx := t.Context()
	img := agentik.Image("image/jpeg", append([]byte{0xff, 0xd8, 0xff}, bytes.Repeat([]byte{1}, 4096)...))

	// Version 1, written as the program of that version did.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	migs, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	conv := agentik.NewID()
	old := agentik.Message{ID: agentik.NewID(), ConversationID: conv, Seq: 1, Date: agentik.TimeOf(agentik.Now().Time),
		Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("old"), img}}
	oldEvent := agentik.MessageEvent(&old)
	oldMem := agentik.MemoryEntry{SourceID: old.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: old.Content}}
	mp, _ := json.Marshal(old)
	ep, _ := json.Marshal(oldEvent)
	memp, _ := json.Marshal(oldMem)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`, nil},
		{migs[0].SQL, nil},
		{`INSERT INTO schema_migrations VALUES (1, ?, 'then')`, []any{migs[0].Name}},
		{`INSERT INTO conversations (id, owner, created_at, updated_at, next_seq, next_ord) VALUES (?, 'alice', 0, 0, 2, 2)`, []any{conv}},
		{`INSERT INTO messages (conversation_id, seq, id, type, date, payload) VALUES (?, 1, ?, 'user_message', 0, ?)`, []any{conv, old.ID, string(mp)}},
		{`INSERT INTO events (conversation_id, type, date, payload) VALUES (?, 'user_message', 0, ?)`, []any{conv, string(ep)}},
		{`INSERT INTO memory (conversation_id, ord, payload) VALUES (?, 1, ?)`, []any{conv, string(memp)}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("version 1 database: %v", err)
		}
	}
	db.Close()

	s := openPath(t, path)
	got, err := s.Message(ctx, conv, old.ID)
	if err != nil || !equalJSON(got, old) {
		t.Fatalf("old message after migration: %+v, %v", got, err)
	}
	if evs, err := s.Events(ctx, conv, 0, 0); err != nil || len(evs) != 1 || !equalJSON(evs[0].Message, old) {
		t.Fatalf("old event after migration: %v", err)
	}
	if mem, err := s.Memory(ctx, conv); err != nil || len(mem) != 1 || mem[0].Message.Content[1] != img {
		t.Fatalf("old memory after migration: %v", err)
	}

	w, m := imageWrite(conv, img)
	if _, _, err := s.Commit(ctx, w); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	msgs, _, err := s.Messages(ctx, conv, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 2 || !equalJSON(msgs[0], old) || !equalJSON(msgs[1], *m) {
		t.Fatalf("journal after a new image: %v", err)
	}
	if n := inlineRows(t, s.wc, img.Data); n != 3 {
		t.Fatalf("%d rows hold the image inline, want the 3 old ones", n)
	}
	if n, size, _, _ := blobStats(t, s.wc); n != 1 {
		t.Fatalf("%d images (%d bytes) stored, want 1", n, size)
	}
	if _, err := s.DeleteConversation(ctx, conv, agentik.Now()); err != nil {
		t.Fatal(err)
	}
	if n, _, _, _ := blobStats(t, s.wc); n != 0 {
		t.Fatalf("%d images left after the delete", n)
	}
}

// TestImagesGoneWhileReading: rows whose images vanished (their
// conversation deleted between the row query and the image query) read as
// the deleted conversation they belong to, and drop out of OpenTurns.
func TestImagesGoneWhileReading(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	c := newConv(t, s)
	img := agentik.Image("image/png", bigImage(4096))
	w, m := imageWrite(c.ID, img)
	if _, _, err := s.Commit(ctx, w); err != nil {
		t.Fatal(err)
	}
	// What a concurrent delete leaves for a reader that already has the rows.
	if _, err := s.wc.ExecContext(ctx, `DELETE FROM images`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Message(ctx, c.ID, m.ID)
	if agentik.ErrorCode(err) != agentik.EInternal {
		t.Fatalf("message of an existing conversation with its image gone: %v, want internal", err)
	}
	turns, err := s.OpenTurns(ctx)
	if err != nil || len(turns) != 0 {
		t.Fatalf("open turns: %d, %v; want none", len(turns), err)
	}
}
