package postgres

import (
	"context"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
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

// column is the images column of a row: NULL when nothing was moved.
func column(refs string) *string {
	if refs == "" {
		return nil
	}
	return &refs
}

// queueImages queues the statements storing a write's images for
// conversation conv, in hash order.
func queueImages(b *pgx.Batch, wi *storeutil.WriteImages, conv string) {
	for _, h := range wi.Hashes() {
		b.Queue(qStoreImage, conv, h, wi.Bytes(h))
	}
}

// restoreImages puts the stored images back into the rows of one read
// (one more query, only when some row has images); parts(i) is the content
// of result i. It returns the results whose images are gone — their
// conversation was deleted after the rows were read.
func restoreImages(ctx context.Context, q querier, rows []storeutil.Pending, parts func(i int) []agentik.Content) (missing []int, err error) {
	return storeutil.RestoreImages(rows, parts, func(hashes []string) (map[string]string, error) {
		return readConn{q}.Images(ctx, hashes)
	})
}
