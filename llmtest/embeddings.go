package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"unicode"
)

// EmbeddingDims is the dimension of BagOfWords's vectors.
const EmbeddingDims = 256

// BagOfWords returns a deterministic embedding that means something to a
// test: each word of a text (lower case, letters and digits), replaced by
// its entry in synonyms when it has one, adds 1 to the dimension its FNV
// hash picks, and the vector is normalised. Texts that share words (or
// synonyms of them) are near; texts that share none are almost
// orthogonal. BagOfWords(map[string]string{"car": "automobile"}) puts "car"
// next to "automobile".
func BagOfWords(synonyms map[string]string) func(string) []float32 {
	return func(text string) []float32 {
		v := make([]float32, EmbeddingDims)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
			if s, ok := synonyms[w]; ok {
				w = s
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%EmbeddingDims]++
		}
		var n float64
		for _, f := range v {
			n += float64(f) * float64(f)
		}
		if n > 0 {
			for i := range v {
				v[i] /= float32(math.Sqrt(n))
			}
		}
		return v
	}
}

// embeddings is the state of POST /v1/embeddings.
type embeddings struct {
	mu     sync.Mutex
	embed  func(string) []float32
	gate   *Gate // non-nil: requests wait there
	status int   // non-zero: requests fail with it
	inputs []string
	reqs   int
}

// Embed sets how POST /v1/embeddings embeds a text (BagOfWords(nil) by
// default).
func (s *Server) Embed(f func(string) []float32) {
	s.emb.mu.Lock()
	s.emb.embed = f
	s.emb.mu.Unlock()
}

// PauseEmbeddings makes every embeddings request wait at g (nil: none
// waits) until g is released, the client gives up or the server closes.
func (s *Server) PauseEmbeddings(g *Gate) {
	s.emb.mu.Lock()
	s.emb.gate = g
	s.emb.mu.Unlock()
}

// FailEmbeddings makes every embeddings request fail with status (0: none
// fails) and an OpenAI error body.
func (s *Server) FailEmbeddings(status int) {
	s.emb.mu.Lock()
	s.emb.status = status
	s.emb.mu.Unlock()
}

// Embedded returns every text the server embedded, in order (a failed or
// abandoned request embeds nothing), and the number of requests that
// embedded them.
func (s *Server) Embedded() (texts []string, requests int) {
	s.emb.mu.Lock()
	defer s.emb.mu.Unlock()
	return append([]string(nil), s.emb.inputs...), s.emb.reqs
}

type embeddingsRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

type embeddingData struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, hr *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	var req embeddingsRequest
	raw, err := io.ReadAll(hr.Body)
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	inputs, ok := embedInputs(req.Input)
	if err != nil || !ok || req.Model == "" {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "want {model, input: string or array of strings}")
		return
	}
	s.emb.mu.Lock()
	gate, status, embed := s.emb.gate, s.emb.status, s.emb.embed
	s.emb.mu.Unlock()
	if gate != nil && !s.waitGate(gate, hr) {
		return
	}
	if status != 0 {
		writeAPIError(w, status, "server_error", "llmtest: embeddings fail")
		return
	}
	if embed == nil {
		embed = BagOfWords(nil)
	}
	data := make([]embeddingData, len(inputs))
	for i, in := range inputs {
		data[i] = embeddingData{Object: "embedding", Index: i, Embedding: embed(in)}
	}
	s.emb.mu.Lock()
	s.emb.inputs = append(s.emb.inputs, inputs...)
	s.emb.reqs++
	s.emb.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data, //nolint:errcheck // the client went away
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
}

// waitGate holds a request at g; false when the client went away or the
// server closed first.
func (s *Server) waitGate(g *Gate, hr *http.Request) bool {
	g.reach()
	select {
	case <-g.released:
		return true
	case <-hr.Context().Done():
		g.abandon()
	case <-s.closed:
	}
	return false
}

// embedInputs reads input: a string or an array of strings.
func embedInputs(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, true
	}
	return nil, false
}

func writeAPIError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": typ}}) //nolint:errcheck // the client went away
}
