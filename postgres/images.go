package postgres

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// Images are stored once (migrations/0003): the rows of a write keep their
// image parts without data and name them in their images column; the bytes
// go to the images table, counted by the conversations that reference them.

const (
	// qStoreImage takes conversation $1's reference to image $2 the first
	// time the conversation mentions it, storing the bytes $3 if no other
	// conversation has; a reference the conversation holds already changes
	// nothing (the image cannot go while it holds it).
	qStoreImage = `WITH ref AS (
			INSERT INTO conversation_images (conversation_id, sha256) VALUES ($1, $2)
			ON CONFLICT DO NOTHING RETURNING sha256)
		INSERT INTO images (sha256, data, refs) SELECT sha256, $3, 1 FROM ref
		ON CONFLICT (sha256) DO UPDATE SET refs = images.refs + 1`
	qLockConversation = `SELECT owner FROM conversations WHERE id = $1 FOR UPDATE`
	// qLockImages locks the images a conversation references, in hash
	// order, the order Commit takes them in: the delete's trigger then
	// updates rows it already holds, so a delete and a commit sharing
	// images never wait on each other in a cycle.
	qLockImages = `SELECT 1 FROM images
		WHERE sha256 IN (SELECT sha256 FROM conversation_images WHERE conversation_id = $1)
		ORDER BY sha256 FOR UPDATE`
	qImages = `SELECT sha256, data FROM images WHERE sha256 = ANY($1)`
)

// writeImages is the image-free form of a write's contents, made before the
// transaction so that decoding and hashing large images holds no lock.
type writeImages struct {
	blobs agentik.ImageBlobs
	msgs  []rowImages // per event of the write (messages only)
	mem   []rowImages // per memory entry
}

// rowImages is one row's content as stored and its images column.
type rowImages struct {
	content []agentik.Content
	refs    string
}

// extractImages returns nil when the write holds no image.
func extractImages(w *agentik.Write) *writeImages {
	has := false
	for _, ev := range w.Events {
		has = has || ev.Message != nil && agentik.HasImage(ev.Message.Content)
	}
	for _, e := range w.Memory {
		has = has || agentik.HasImage(e.Message.Content)
	}
	if !has {
		return nil
	}
	wi := &writeImages{msgs: make([]rowImages, len(w.Events)), mem: make([]rowImages, len(w.Memory))}
	for i, ev := range w.Events {
		if ev.Message != nil {
			wi.msgs[i].content, wi.msgs[i].refs = wi.blobs.Extract(ev.Message.Content)
		}
	}
	for i, e := range w.Memory {
		wi.mem[i].content, wi.mem[i].refs = wi.blobs.Extract(e.Message.Content)
	}
	if wi.blobs.Len() == 0 {
		return nil // images only with non-canonical data: all inline
	}
	return wi
}

// message returns the stored content and images column of event i's message.
func (wi *writeImages) message(i int, m *agentik.Message) ([]agentik.Content, *string) {
	if wi == nil {
		return m.Content, nil
	}
	return wi.msgs[i].content, column(wi.msgs[i].refs)
}

// memory returns the stored content and images column of memory entry i.
func (wi *writeImages) memory(i int, e *agentik.MemoryEntry) ([]agentik.Content, *string) {
	if wi == nil {
		return e.Message.Content, nil
	}
	return wi.mem[i].content, column(wi.mem[i].refs)
}

// column is the images column of a row: NULL when nothing was moved.
func column(refs string) *string {
	if refs == "" {
		return nil
	}
	return &refs
}

// queue queues the statements storing the write's images for conversation
// conv, in hash order.
func (wi *writeImages) queue(b *pgx.Batch, conv string) {
	if wi == nil {
		return
	}
	for _, h := range wi.blobs.Hashes() {
		b.Queue(qStoreImage, conv, h, wi.blobs.Bytes(h))
	}
}

// pending is a row of a read whose images column is set: index i of the
// read's results, and the column.
type pending struct {
	i    int
	refs string
}

// restoreImages puts the stored images back into the rows of one read
// (one more query, only when some row has images); parts(i) is the content
// of result i. It returns the results whose images are gone — their
// conversation was deleted after the rows were read.
func restoreImages(ctx context.Context, q querier, rows []pending, parts func(i int) []agentik.Content) (missing []int, err error) {
	if len(rows) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, p := range rows {
		agentik.ImageRefs(p.refs, want)
	}
	hashes := make([]string, 0, len(want))
	for h := range want {
		hashes = append(hashes, h)
	}
	data := make(map[string]string, len(want))
	err = queryEach(ctx, q, func(r pgx.Rows) error {
		var h string
		var raw []byte
		if err := r.Scan(&h, &raw); err != nil {
			return err
		}
		data[h] = base64.StdEncoding.EncodeToString(raw)
		return nil
	}, qImages, hashes)
	if err != nil {
		return nil, err
	}
	for _, p := range rows {
		err := agentik.RestoreImages(parts(p.i), p.refs, data)
		if errors.Is(err, agentik.ErrImageMissing) {
			missing = append(missing, p.i)
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// restoreConversation restores the images of rows of one conversation. A
// missing image means the conversation was deleted meanwhile: ENotFound,
// what the read would have answered a moment later.
func restoreConversation(ctx context.Context, q querier, conv string, rows []pending, parts func(i int) []agentik.Content) error {
	missing, err := restoreImages(ctx, q, rows, parts)
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := exists(ctx, q, conv); err != nil {
		return err
	}
	return agentik.WrapError(agentik.EInternal, "stored image missing", agentik.ErrImageMissing)
}

// dropIndexes removes the elements at the ascending indexes drop.
func dropIndexes[T any](s []T, drop []int) []T {
	if len(drop) == 0 {
		return s
	}
	out := s[:0]
	for i, v := range s {
		if len(drop) > 0 && drop[0] == i {
			drop = drop[1:]
			continue
		}
		out = append(out, v)
	}
	return out
}
