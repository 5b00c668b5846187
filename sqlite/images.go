package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"

	"github.com/agentik/agentik"
)

// Images are stored once (migrations/0002): the rows of a write keep their
// image parts without data and name them in their images column; the bytes
// go to the images table, counted by the conversations that reference them.

// writeImages is the image-free form of a write's contents, made before the
// write transaction so that decoding and hashing large images does not hold
// the writer.
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
func (wi *writeImages) message(i int, m *agentik.Message) ([]agentik.Content, any) {
	if wi == nil {
		return m.Content, nil
	}
	return wi.msgs[i].content, column(wi.msgs[i].refs)
}

// memory returns the stored content and images column of memory entry i.
func (wi *writeImages) memory(i int, e *agentik.MemoryEntry) ([]agentik.Content, any) {
	if wi == nil {
		return e.Message.Content, nil
	}
	return wi.mem[i].content, column(wi.mem[i].refs)
}

// column is the images column of a row: NULL when nothing was moved.
func column(refs string) any {
	if refs == "" {
		return nil
	}
	return refs
}

// store writes the collected images of a write to conversation conv, in
// hash order.
func (wi *writeImages) store(ctx context.Context, tx *wtx, conv string) error {
	if wi == nil {
		return nil
	}
	for _, h := range wi.blobs.Hashes() {
		res, err := tx.ExecContext(ctx, qReferenceImage, conv, h)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			continue // already referenced by this conversation, so stored
		}
		if _, err := tx.ExecContext(ctx, qInsertImage, h, wi.blobs.Bytes(h)); err != nil {
			return err
		}
	}
	return nil
}

// pending is a row of a read whose images column is set: index i of the
// read's results, and the column.
type pending struct {
	i    int
	refs string
}

// restoreImages puts the stored images back into the rows of one read;
// parts(i) is the content of result i. It returns the results whose images
// are gone — their conversation was deleted after the rows were read.
func restoreImages(ctx context.Context, q queryer, rows []pending, parts func(i int) []agentik.Content) (missing []int, err error) {
	if len(rows) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, p := range rows {
		agentik.ImageRefs(p.refs, want)
	}
	data := make(map[string]string, len(want))
	for h := range want {
		var raw []byte
		err := q.QueryRowContext(ctx, qImage, h).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		data[h] = base64.StdEncoding.EncodeToString(raw)
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
func restoreConversation(ctx context.Context, q queryer, conv string, rows []pending, parts func(i int) []agentik.Content) error {
	missing, err := restoreImages(ctx, q, rows, parts)
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := exists(ctx, q, conv); err != nil {
		return err
	}
	return agentik.WrapError(agentik.EInternal, "stored image missing", agentik.ErrImageMissing)
}
