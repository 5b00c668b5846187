package storeutil

import (
	"errors"

	"github.com/agentik/agentik"
)

// Images are stored once: the rows of a write keep their image parts
// without data and name them in their images column; the bytes go to an
// images table, counted by the conversations that reference them.

// WriteImages is the image-free form of a write's contents, made before the
// write transaction so that decoding and hashing large images holds no lock.
type WriteImages struct {
	blobs agentik.ImageBlobs
	msgs  []rowImages // per event of the write (messages only)
	mem   []rowImages // per memory entry
}

// rowImages is one row's content as stored and its images column.
type rowImages struct {
	content []agentik.Content
	refs    string
}

// ExtractImages returns nil when the write holds no image to store apart.
func ExtractImages(w *agentik.Write) *WriteImages {
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
	wi := &WriteImages{msgs: make([]rowImages, len(w.Events)), mem: make([]rowImages, len(w.Memory))}
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

// Message returns the stored content and images column ("" for none) of
// event i's message.
func (wi *WriteImages) Message(i int, m *agentik.Message) ([]agentik.Content, string) {
	if wi == nil {
		return m.Content, ""
	}
	return wi.msgs[i].content, wi.msgs[i].refs
}

// Memory returns the stored content and images column of memory entry i.
func (wi *WriteImages) Memory(i int, e *agentik.MemoryEntry) ([]agentik.Content, string) {
	if wi == nil {
		return e.Message.Content, ""
	}
	return wi.mem[i].content, wi.mem[i].refs
}

// Hashes are the write's images, in hash order: the order every writer
// locks them in.
func (wi *WriteImages) Hashes() []string {
	if wi == nil {
		return nil
	}
	return wi.blobs.Hashes()
}

// Bytes returns the data of the image with hash h.
func (wi *WriteImages) Bytes(h string) []byte { return wi.blobs.Bytes(h) }

// Pending is a row of a read whose images column is set: index I of the
// read's results, and the column.
type Pending struct {
	I    int
	Refs string
}

// Wanted returns the hashes of the images the rows name.
func Wanted(rows []Pending) []string {
	want := map[string]bool{}
	for _, p := range rows {
		agentik.ImageRefs(p.Refs, want)
	}
	hashes := make([]string, 0, len(want))
	for h := range want {
		hashes = append(hashes, h)
	}
	return hashes
}

// Restore puts the images (base64 data by hash, as read) back into the
// rows; parts(i) is the content of result i. It returns the results whose
// images are gone — their conversation was deleted after the rows were read.
func Restore(rows []Pending, data map[string]string, parts func(i int) []agentik.Content) (missing []int, err error) {
	for _, p := range rows {
		err := agentik.RestoreImages(parts(p.I), p.Refs, data)
		if errors.Is(err, agentik.ErrImageMissing) {
			missing = append(missing, p.I)
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// ErrImageMissing is the error of a read of one conversation whose images
// are gone although the conversation exists.
var ErrImageMissing = agentik.WrapError(agentik.EInternal, "stored image missing", agentik.ErrImageMissing)

// DropIndexes removes the elements at the ascending indexes drop.
func DropIndexes[T any](s []T, drop []int) []T {
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
