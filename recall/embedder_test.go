package recall

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestEmbedderBatch: one request carries every text, and the vectors come
// back in the texts' order, as llmtest's bag of words makes them.
func TestEmbedderBatch(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	bag := llmtest.BagOfWords(map[string]string{"car": "automobile"})
	llm.Embed(bag)
	e := NewEmbedder(llm.URL(), "bag", "", nil)
	vecs, err := e.Embed(t.Context(), []string{"a car", "an automobile", "a zeppelin"}, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if texts, reqs := llm.Embedded(); len(texts) != 3 || reqs != 1 {
		t.Fatalf("%d texts in %d requests", len(texts), reqs)
	}
	for i, s := range []string{"a car", "an automobile", "a zeppelin"} {
		if !equalVec(vecs[i], bag(s)) {
			t.Fatalf("vector %d is not that of %q", i, s)
		}
	}
}

// TestEmbedderRetries: 429 and 5xx are tried again (a Retry-After of one
// second obeyed), up to the tries allowed; a 400 is final at once.
func TestEmbedderRetries(t *testing.T) {
	var calls atomic.Int32
	statuses := []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		if st := statuses[min(n, len(statuses)-1)]; st != http.StatusOK {
			if st == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(st)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"data": []map[string]any{{"index": 0, "embedding": []float32{1, 2}}}})
	}))
	t.Cleanup(srv.Close)
	e := NewEmbedder(srv.URL, "m", "key", nil)
	if _, err := e.Embed(t.Context(), []string{"x"}, 2, time.Second); err == nil || errors.Is(err, errRefused) || calls.Load() != 2 {
		t.Fatalf("two tries: %v after %d calls", err, calls.Load())
	}
	calls.Store(0)
	vecs, err := e.Embed(t.Context(), []string{"x"}, EmbedTries, time.Second)
	if err != nil || len(vecs) != 1 || !equalVec(vecs[0], []float32{1, 2}) || calls.Load() != 3 {
		t.Fatalf("%v %v after %d calls", vecs, err, calls.Load())
	}
	statuses = []int{http.StatusBadRequest}
	calls.Store(0)
	if _, err := e.Embed(t.Context(), []string{"x"}, EmbedTries, time.Second); !errors.Is(err, errRefused) || calls.Load() != 1 {
		t.Fatalf("a 400: %v after %d calls", err, calls.Load())
	}
}

// TestFuse: a message both lists found comes first; ties go to the newer.
func TestFuse(t *testing.T) {
	hit := func(conv string, date int) agentik.SearchHit {
		return agentik.SearchHit{ConversationID: conv, Seq: 1, Date: agentik.TimeOf(time.Unix(int64(date), 0))}
	}
	words := []agentik.SearchHit{hit("w1", 5), hit("both", 1)}
	near := []agentik.SearchHit{hit("n1", 6), hit("both", 1)}
	got := fuse(words, near, 3)
	if len(got) != 3 || got[0].ConversationID != "both" || got[1].ConversationID != "n1" || got[2].ConversationID != "w1" {
		t.Fatalf("fused: %+v", got)
	}
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
