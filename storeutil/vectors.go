package storeutil

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/agentik/agentik"
)

// EncodeVector is how the stores keep a vector: its float32s, little
// endian, 4 bytes each.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads what EncodeVector wrote.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("a stored vector of %d bytes", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// EmbedText makes the MessageText of a stored user or assistant message
// from its payload: its text parts (agentik.ContentSearchText), at most
// agentik.MaxEmbedRunes runes of them.
func EmbedText(id, payload string) (agentik.MessageText, error) {
	var m struct {
		Content []agentik.Content `json:"content"`
	}
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return agentik.MessageText{}, err
	}
	text := agentik.ContentSearchText(m.Content)
	if r := []rune(text); len(r) > agentik.MaxEmbedRunes {
		text = string(r[:agentik.MaxEmbedRunes])
	}
	return agentik.MessageText{ID: id, Text: text}, nil
}

// Scored is one vector of a Nearest search: its index in the candidates
// and its cosine similarity to the query.
type Scored struct {
	Index      int
	Similarity float32
}

// Nearest compares q with each candidate by cosine similarity and returns
// those at least minSim, most similar first (ties: the lower index
// first), at most limit. Empty candidates and those of another dimension
// never match.
func Nearest(cands [][]float32, q []float32, minSim float32, limit int) []Scored {
	qn := norm(q)
	var out []Scored
	for i, c := range cands {
		if len(c) != len(q) || len(c) == 0 || qn == 0 {
			continue
		}
		cn := norm(c)
		if cn == 0 {
			continue
		}
		if sim := float32(dot(c, q) / (cn * qn)); sim >= minSim {
			out = append(out, Scored{Index: i, Similarity: sim})
		}
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Similarity > b.Similarity:
			return -1
		case a.Similarity < b.Similarity:
			return 1
		}
		return 0
	})
	return out[:min(len(out), limit)]
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func norm(a []float32) float64 { return math.Sqrt(dot(a, a)) }
