package agentik

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
)

// Stores that write to disk keep each image once: its bytes in a table keyed
// by their SHA-256, and in the rows that mention it (the journal message, its
// event, the working-memory entry) the part without its data, plus a list of
// references in a column of the row. The helpers below are that split and its
// inverse, shared by the sqlite and postgres stores. A row holds at most one
// []Content (Message.Content, Event.Message.Content or
// MemoryEntry.Message.Content), so a reference list is positional: its i-th
// entry belongs to the i-th image part of that slice.

// ErrImageMissing is wrapped by RestoreImages when a referenced image is not
// in the store: the row's conversation was deleted between reading the row
// and reading the image.
var ErrImageMissing = errors.New("stored image missing")

// ImageBlobs collects the images moved out of the rows of one write. The zero
// value is ready to use; not safe for concurrent use.
type ImageBlobs struct {
	byHash map[string][]byte // hex SHA-256 → decoded bytes
	// byData remembers the hash of each base64 text already seen: the same
	// image is in the message, its event and the memory entry of one write,
	// and decoding and hashing it once is enough.
	byData map[string]string
}

// Extract returns parts as a store keeps them and the row's reference list.
// Every image part whose data is canonical base64 (standard alphabet, padded,
// no line breaks) loses its Data, and its decoded bytes are collected in b.
// Other image parts keep their data inline — decoding them would not give the
// same text back — and get an empty reference. When no part was moved, parts
// itself and "" are returned, without allocating: a write without images
// costs nothing more.
func (b *ImageBlobs) Extract(parts []Content) ([]Content, string) {
	if !HasImage(parts) {
		return parts, ""
	}
	var stored []Content
	var refs []string
	moved := false
	for i, p := range parts {
		if p.Type != ContentImage {
			continue
		}
		h := b.add(p.Data)
		refs = append(refs, h)
		if h == "" {
			continue
		}
		if stored == nil {
			stored = slices.Clone(parts)
		}
		stored[i].Data = ""
		moved = true
	}
	if !moved {
		return parts, ""
	}
	return stored, strings.Join(refs, ",")
}

// add decodes and records one image's data and returns its hash, or "" when
// the data is not canonical base64.
func (b *ImageBlobs) add(data string) string {
	if h, ok := b.byData[data]; ok {
		return h
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(data)
	// Strict still skips line breaks; the length check refuses them.
	if err != nil || data == "" || base64.StdEncoding.EncodedLen(len(raw)) != len(data) {
		return ""
	}
	sum := sha256.Sum256(raw)
	h := hex.EncodeToString(sum[:])
	if b.byHash == nil {
		b.byHash = map[string][]byte{}
		b.byData = map[string]string{}
	}
	b.byHash[h] = raw
	b.byData[data] = h
	return h
}

// Len is the number of distinct images collected.
func (b *ImageBlobs) Len() int { return len(b.byHash) }

// Hashes returns the hashes of the collected images in ascending order: the
// order stores write them in, so that concurrent writers lock image rows in
// one order.
func (b *ImageBlobs) Hashes() []string {
	hs := make([]string, 0, len(b.byHash))
	for h := range b.byHash {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// Bytes returns the decoded bytes of a collected image.
func (b *ImageBlobs) Bytes(hash string) []byte { return b.byHash[hash] }

// ImageRefs returns the hashes a reference list names, each once, for a
// store to read the images of some rows in one query.
func ImageRefs(refs string, into map[string]bool) {
	for h := range strings.SplitSeq(refs, ",") {
		if h != "" {
			into[h] = true
		}
	}
}

// RestoreImages puts the data back into parts, decoded from a row whose
// reference list is refs. data maps hashes to base64 text. A hash missing
// from data is an error wrapping ErrImageMissing; a list that does not match
// the image parts is EInternal. parts is changed in place.
func RestoreImages(parts []Content, refs string, data map[string]string) error {
	if refs == "" {
		return nil
	}
	hs := strings.Split(refs, ",")
	n := 0
	for i := range parts {
		if parts[i].Type != ContentImage {
			continue
		}
		if n == len(hs) {
			return Errorf(EInternal, "stored row names fewer images than it holds")
		}
		h := hs[n]
		n++
		if h == "" {
			continue // kept inline
		}
		d, ok := data[h]
		if !ok {
			return WrapError(EInternal, "stored image missing", ErrImageMissing)
		}
		parts[i].Data = d
	}
	if n != len(hs) {
		return Errorf(EInternal, "stored row names more images than it holds")
	}
	return nil
}
