package recall

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// walks is a vector store that records the floor of each walk and lists
// n messages for the first.
type walks struct {
	agentik.MessageEmbeddings
	since []time.Time
	n     int
}

func (w *walks) UnembeddedMessages(_ context.Context, _ string, since time.Time, limit int) ([]agentik.MessageText, error) {
	w.since = append(w.since, since)
	var out []agentik.MessageText
	for i := 0; i < min(w.n, limit); i++ {
		out = append(out, agentik.MessageText{ID: agentik.NewID(), Text: "text"})
	}
	w.n -= len(out)
	return out, nil
}

func (w *walks) PutEmbeddings(context.Context, string, []agentik.MessageVector) error { return nil }

// TestIndexerWalksOnlyWhatIsNew: the first rounds walk the whole journal
// until one finds less than a batch; the next rounds walk only the
// messages dated IndexMargin before that walk began, or later.
func TestIndexerWalksOnlyWhatIsNew(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Embed(llmtest.BagOfWords(nil))
	w := &walks{n: EmbedBatch + 1}
	x := NewIndexer(w, NewEmbedder(llm.URL(), "bag", "", nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := time.Now()
	for _, want := range []int{EmbedBatch, 1, 0, 0} {
		if n, err := x.Round(t.Context()); n != want || err != nil {
			t.Fatalf("round embedded %d, %v; want %d", n, err, want)
		}
	}
	if !w.since[0].IsZero() || !w.since[1].IsZero() {
		t.Fatalf("the first walk's floors %v, want the whole journal until it is done", w.since[:2])
	}
	for _, s := range w.since[2:] {
		if s.Before(start.Add(-IndexMargin)) || s.After(time.Now().Add(-IndexMargin)) {
			t.Fatalf("a later walk's floor %v, want %v before a walk that began after %v", s, IndexMargin, start)
		}
	}
}
