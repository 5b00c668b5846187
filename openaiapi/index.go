package openaiapi

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// index finds the conversation a resent Chat Completions history
// continues: after every completion the history as its client now holds it
// (the request's messages and the answer) is recorded under a digest, with
// the conversation and the journal's last seq then. A later request whose
// history, up to one of its assistant messages, has a recorded digest
// continues that conversation. The index lives in the process; after a
// restart, or in another process, the lookup keys stored with the user
// messages find the history instead (Handler.durableMatch).
type index struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]spot
	order   [][32]byte // insertion order, for eviction
}

// spot is where a recorded history lies: its conversation and the seq of
// the journal's last message when it was recorded.
type spot struct {
	conv string
	seq  int64
}

func newIndex(max int) *index {
	return &index{max: max, entries: map[[32]byte]spot{}}
}

// put records key.
func (x *index) put(key [32]byte, s spot) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.entries[key]; !ok {
		x.order = append(x.order, key)
	}
	x.entries[key] = s
	for len(x.order) > x.max {
		delete(x.entries, x.order[0])
		x.order = x.order[1:]
	}
}

// get returns what key records.
func (x *index) get(key [32]byte) (spot, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.entries[key]
	return s, ok
}

// view is a message of a history as the digest sees it: its role, its text
// and the ids of the calls it makes or answers. System and developer
// messages are no part of it.
type view struct {
	role   string
	text   string
	calls  []string
	callID string
}

// digests returns the running digests of hist under scope (the caller and
// the model): digests[k] is the digest of hist[:k].
func digests(scope string, hist []view) [][32]byte {
	out := make([][32]byte, len(hist)+1)
	out[0] = sha256.Sum256([]byte("agentik/openai/v1\x00" + scope))
	for i, m := range hist {
		h := sha256.New()
		h.Write(out[i][:])
		field(h, m.role)
		field(h, m.text)
		field(h, m.callID)
		for _, c := range m.calls {
			field(h, c)
		}
		copy(out[i+1][:], h.Sum(nil))
	}
	return out
}

// field writes s length-prefixed, so that no two histories share a digest
// by moving bytes across fields.
func field(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
