package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"

	"github.com/agentik/agentik"
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

// restoreImages puts the stored images back into the rows of one read;
// parts(i) is the content of result i. It returns the results whose images
// are gone — their conversation was deleted after the rows were read.
func restoreImages(ctx context.Context, q queryer, rows []storeutil.Pending, parts func(i int) []agentik.Content) (missing []int, err error) {
	if len(rows) == 0 {
		return nil, nil
	}
	hashes := storeutil.Wanted(rows)
	data := make(map[string]string, len(hashes))
	for _, h := range hashes {
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
	return storeutil.Restore(rows, data, parts)
}

// restoreConversation restores the images of rows of one conversation. A
// missing image means the conversation was deleted meanwhile: ENotFound,
// what the read would have answered a moment later.
func restoreConversation(ctx context.Context, q queryer, conv string, rows []storeutil.Pending, parts func(i int) []agentik.Content) error {
	missing, err := restoreImages(ctx, q, rows, parts)
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := exists(ctx, q, conv); err != nil {
		return err
	}
	return storeutil.ErrImageMissing
}
