package sqlite

import (
	"context"

	"github.com/agentik/agentik/storeutil"
)

// Images are stored once (migrations/0002): the rows of a write keep their
// image parts without data and name them in their images column; the bytes
// go to the images table, counted by the conversations that reference them.

// column is the images column of a row: NULL when nothing was moved.
func column(refs string) any {
	if refs == "" {
		return nil
	}
	return refs
}

// store writes the collected images of a write to conversation conv, in
// hash order.
func storeImages(ctx context.Context, tx *wtx, wi *storeutil.WriteImages, conv string) error {
	for _, h := range wi.Hashes() {
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
		if _, err := tx.ExecContext(ctx, qInsertImage, h, wi.Bytes(h)); err != nil {
			return err
		}
	}
	return nil
}
