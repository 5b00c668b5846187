package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
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

// blobStats reads what the images tables hold: rows, bytes, references and
// conversation links.
func blobStats(t *testing.T, s *Store) (images, size, refs, links int64) {
	t.Helper()
	err := s.pool.QueryRow(t.Context(), `SELECT COUNT(*), COALESCE(SUM(length(data)), 0), COALESCE(SUM(refs), 0),
		(SELECT COUNT(*) FROM conversation_images) FROM images`).Scan(&images, &size, &refs, &links)
	if err != nil {
		t.Fatalf("blob stats: %v", err)
	}
	return
}

// inlineRows counts the rows of messages, events and memory whose payload
// contains s.
func inlineRows(t *testing.T, s *Store, sub string) int64 {
	t.Helper()
	var n int64
	err := s.pool.QueryRow(t.Context(), `SELECT
		(SELECT COUNT(*) FROM messages WHERE strpos(payload, $1) > 0) +
		(SELECT COUNT(*) FROM events WHERE strpos(payload, $1) > 0) +
		(SELECT COUNT(*) FROM memory WHERE strpos(payload, $1) > 0)`, sub).Scan(&n)
	if err != nil {
		t.Fatalf("count inline rows: %v", err)
	}
	return n
}

func commitOK(t *testing.T, s *Store, w agentik.Write) []agentik.Event {
	t.Helper()
	evs, _, err := s.Commit(t.Context(), w)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return evs
}

// TestImagesStoredOnce: an image sent in two conversations, in the journal,
// the event and working memory of each, and twice in one message, is one
// row of the images table holding its bytes once; no payload holds its
// base64. Deleting the conversations releases it, the last one removes it.
func TestImagesStoredOnce(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := t.Context()
	raw := bigImage(256 << 10)
	img := agentik.Image("image/png", raw)
	a, b := createConv(t, s), createConv(t, s)
	for _, conv := range []string{a, a, b} {
		w, _ := imageWrite(conv, agentik.Text("look"), img, img)
		commitOK(t, s, w)
	}
	if n, size, refs, links := blobStats(t, s); n != 1 || size != int64(len(raw)) || refs != 2 || links != 2 {
		t.Fatalf("images: %d rows, %d bytes, %d refs, %d links; want 1, %d, 2, 2", n, size, refs, links, len(raw))
	}
	if n := inlineRows(t, s, img.Data[:64]); n != 0 {
		t.Fatalf("%d rows hold the image's base64", n)
	}
	var payloads int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT SUM(length(payload)) FROM messages) +
		(SELECT SUM(length(payload)) FROM events) + (SELECT SUM(length(payload)) FROM memory)`).Scan(&payloads); err != nil {
		t.Fatal(err)
	}
	if payloads > int64(len(raw))/10 {
		t.Fatalf("payloads hold %d bytes for a %d-byte image", payloads, len(raw))
	}

	if _, err := s.DeleteConversation(ctx, a, agentik.Now()); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if n, _, refs, links := blobStats(t, s); n != 1 || refs != 1 || links != 1 {
		t.Fatalf("after deleting a: %d images, %d refs, %d links; want 1, 1, 1", n, refs, links)
	}
	if mem, err := s.Memory(ctx, b); err != nil || mem[0].Message.Content[1] != img {
		t.Fatalf("b's memory after deleting a: %v", err)
	}
	if _, err := s.DeleteConversation(ctx, b, agentik.Now()); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if n, _, refs, links := blobStats(t, s); n != 0 || refs != 0 || links != 0 {
		t.Fatalf("after deleting both: %d images, %d refs, %d links; want none", n, refs, links)
	}

	// A commit that fails stores no image.
	w, _ := imageWrite(agentik.NewID(), img)
	if _, _, err := s.Commit(ctx, w); agentik.ErrorCode(err) != agentik.ENotFound {
		t.Fatalf("commit to an unknown conversation: %v", err)
	}
	if n, _, _, links := blobStats(t, s); n != 0 || links != 0 {
		t.Fatalf("a failed commit stored %d images, %d links", n, links)
	}
}

// TestImagesConcurrentDeletes: conversations sharing images are written and
// deleted by several processes at once. No commit or delete fails (no
// deadlock between them), the conversation that stays reads its images
// throughout, and at the end every image is referenced exactly by the
// conversations that mention it.
func TestImagesConcurrentDeletes(t *testing.T) {
	dsn := freshSchema(t)
	stores := []*Store{openDSN(t, dsn), openDSN(t, dsn), openDSN(t, dsn)}
	ctx := t.Context()
	shared := []agentik.Content{agentik.Image("image/png", bigImage(8192)), agentik.Image("image/png", bigImage(8192)),
		agentik.Image("image/png", bigImage(8192))}
	keep := createConv(t, stores[0])
	w, _ := imageWrite(keep, shared[0])
	commitOK(t, stores[0], w)

	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*3)
	for i := range workers {
		s := stores[i%len(stores)]
		wg.Go(func() {
			for r := range rounds {
				id := agentik.NewID()
				now := agentik.Now()
				if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "bob", CreatedAt: now, UpdatedAt: now}); err != nil {
					errs <- err
					return
				}
				// Each worker mentions the shared images in its own order.
				content := []agentik.Content{shared[(i+r)%3], shared[(i+r+1)%3], shared[(i+r+2)%3]}
				w, _ := imageWrite(id, content...)
				if _, _, err := s.Commit(ctx, w); err != nil {
					errs <- fmt.Errorf("commit: %w", err)
					return
				}
				// Another conversation may have released the same image
				// meanwhile: this one's reference keeps it.
				if got, err := s.Message(ctx, id, w.Events[0].Message.ID); err != nil || !equalJSON(got.Content, content) {
					errs <- fmt.Errorf("read back: %v", err)
					return
				}
				if _, err := s.DeleteConversation(ctx, id, agentik.Now()); err != nil {
					errs <- fmt.Errorf("delete: %w", err)
					return
				}
			}
		})
	}
	// The kept conversation is written and read meanwhile.
	var readErr error
	wg.Go(func() {
		for range rounds {
			w, _ := imageWrite(keep, shared[1], shared[0])
			if _, _, err := stores[2].Commit(ctx, w); err != nil {
				readErr = fmt.Errorf("commit to the kept conversation: %w", err)
				return
			}
			mem, err := stores[1].Memory(ctx, keep)
			if err != nil {
				readErr = err
				return
			}
			for _, e := range mem {
				for _, c := range e.Message.Content {
					if c.Data == "" {
						readErr = fmt.Errorf("image without data in %s", agentik.JoinText(e.Message.Content))
						return
					}
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	// Only keep's two images are left, each referenced once.
	if n, _, refs, links := blobStats(t, stores[0]); n != 2 || refs != 2 || links != 2 {
		t.Fatalf("after the deletes: %d images, %d refs, %d links; want 2, 2, 2", n, refs, links)
	}
	msgs, _, err := stores[0].Messages(ctx, keep, agentik.MessagesRequest{Limit: 100})
	if err != nil || len(msgs) != rounds+1 || msgs[rounds].Content[0] != shared[1] || msgs[0].Content[0] != shared[0] {
		t.Fatalf("kept journal: %d messages, %v", len(msgs), err)
	}
}

// TestImagesBeforeMigration: a database written before images were stored
// apart (image data inline in every row) is migrated, reads as it was, and
// takes new images stored once beside the old rows.
func TestImagesBeforeMigration(t *testing.T) {
	dsn := freshSchema(t)
	ctx := t.Context()
	migs, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var before int // the migrations before images
	for i, m := range migs {
		if strings.HasSuffix(m.Name, "_images.sql") {
			before = i
		}
	}
	img := agentik.Image("image/jpeg", append([]byte{0xff, 0xd8, 0xff}, bytes.Repeat([]byte{1}, 4096)...))
	conv := agentik.NewID()
	old := agentik.Message{ID: agentik.NewID(), ConversationID: conv, Seq: 1, Date: agentik.TimeOf(time.Now()),
		Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("old"), img}}
	oldEvent := agentik.MessageEvent(&old)
	oldEvent.Cursor = 1
	oldMem := agentik.MemoryEntry{SourceID: old.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: old.Content}}
	mp, _ := json.Marshal(old)
	oe := oldEvent
	oe.Cursor = 0
	ep, _ := json.Marshal(oe)
	memp, _ := json.Marshal(oldMem)

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	for _, m := range migs[:before] {
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
	}
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("old schema: %v", err)
		}
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO conversations (id, owner, created_at, updated_at, next_seq, next_ord) VALUES ($1, 'alice', now(), now(), 2, 2)`, []any{conv}},
		{`INSERT INTO messages (conversation_id, seq, id, type, date, payload) VALUES ($1, 1, $2, 'user_message', now(), $3)`, []any{conv, old.ID, string(mp)}},
		{`UPDATE cursors SET last = 1 WHERE name = 'events'`, nil},
		{`INSERT INTO events (cursor, conversation_id, type, date, payload) VALUES (1, $1, 'user_message', now(), $2)`, []any{conv, string(ep)}},
		{`INSERT INTO memory (conversation_id, ord, payload) VALUES ($1, 1, $2)`, []any{conv, string(memp)}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("old rows: %v", err)
		}
	}
	conn.Close(ctx)

	s := openDSN(t, dsn)
	got, err := s.Message(ctx, conv, old.ID)
	if err != nil || !equalJSON(got, old) {
		t.Fatalf("old message after migration: %+v, %v", got, err)
	}
	if evs, err := s.Events(ctx, conv, 0, 0); err != nil || len(evs) != 1 || !equalJSON(evs[0], oldEvent) {
		t.Fatalf("old event after migration: %v", err)
	}
	if mem, err := s.Memory(ctx, conv); err != nil || len(mem) != 1 || mem[0].Message.Content[1] != img {
		t.Fatalf("old memory after migration: %v", err)
	}
	w, m := imageWrite(conv, img)
	commitOK(t, s, w)
	msgs, _, err := s.Messages(ctx, conv, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 2 || !equalJSON(msgs[0], old) || !equalJSON(msgs[1], *m) {
		t.Fatalf("journal after a new image: %v", err)
	}
	if n := inlineRows(t, s, img.Data); n != 3 {
		t.Fatalf("%d rows hold the image inline, want the 3 old ones", n)
	}
	if n, _, _, _ := blobStats(t, s); n != 1 {
		t.Fatalf("%d images stored, want 1", n)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// TestBusImages: an event with an image committed by one process reaches a
// subscriber of another — read back from the store by the Bus — whole.
func TestBusImages(t *testing.T) {
	p := newPair(t)
	sa, ba, conv, sub := p.sa, p.ba, p.conv, p.sub
	img := agentik.Image("image/png", bigImage(64<<10))
	w, m := imageWrite(conv, agentik.Text("see"), img)
	evs := commitOK(t, sa, w)
	ba.Publish(evs[0])
	got := next(t, sub)
	if !equalJSON(got, evs[0]) || got.Message.Content[1] != img {
		t.Fatalf("event across processes: %s", agentik.JoinText(got.Message.Content))
	}
	if got.Message.ID != m.ID {
		t.Fatalf("got message %s, want %s", got.Message.ID, m.ID)
	}
}
