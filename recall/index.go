package recall

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentik/agentik"
)

// Bounds of the background indexer.
const (
	// IndexPoll is how long the indexer waits, when it found nothing to
	// embed, before it looks again (sooner when Nudge is called): the
	// longest a message another process wrote waits to be embedded.
	IndexPoll = 10 * time.Second
	// indexBackoff bounds the wait after a failed round (the endpoint or
	// the store unavailable), doubling from a second.
	indexBackoff = time.Minute
	// IndexSweep is how often the indexer walks the whole journal, as it
	// does at start: between sweeps it walks only the messages dated
	// IndexMargin before its last walk or later, so a round costs the new
	// messages, not the journal. A message committed more than IndexMargin
	// after its date (another process's, held up) waits for the next sweep.
	IndexSweep  = 10 * time.Minute
	IndexMargin = 5 * time.Minute
)

// Indexer embeds the messages of one agent's store that have no vector of
// its embedder's model, EmbedBatch at a time, in the background: never on
// a turn's path. What it stored survives a restart; what it had not is
// found missing again. Several processes on one database may embed the
// same message once each (the stores write it idempotently); a vector is
// never written twice by one process.
type Indexer struct {
	store agentik.MessageEmbeddings
	emb   *Embedder
	log   *slog.Logger
	wake  chan struct{}
	// Run's walk: the floor of the next round (zero: the whole journal),
	// the floor to take when this walk has found everything, and when the
	// last sweep began.
	since, next, swept time.Time
}

// NewIndexer returns the indexer of store through emb.
func NewIndexer(store agentik.MessageEmbeddings, emb *Embedder, log *slog.Logger) *Indexer {
	return &Indexer{store: store, emb: emb, log: log, wake: make(chan struct{}, 1)}
}

// Nudge tells the indexer that messages were written: it looks at once
// instead of at its next poll. It never blocks.
func (x *Indexer) Nudge() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Run embeds until ctx ends.
func (x *Indexer) Run(ctx context.Context) {
	failures := 0
	for {
		n, err := x.Round(ctx)
		wait := IndexPoll
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			wait = min(time.Second<<min(failures-1, 10), indexBackoff)
			x.log.Warn("semantic recall: embedding failed; will try again", "error", err, "retry_in", wait)
		case n == EmbedBatch:
			failures = 0
			continue
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-x.wake:
		case <-time.After(wait):
		}
	}
}

// Round embeds one batch of messages with no vector and stores their
// vectors; n is how many it took. Not safe for concurrent use (Run calls
// it).
func (x *Indexer) Round(ctx context.Context) (n int, err error) {
	now := time.Now()
	if now.Sub(x.swept) >= IndexSweep {
		x.since, x.swept = time.Time{}, now // a sweep
	}
	if x.next.IsZero() {
		x.next = now.Add(-IndexMargin) // the floor once this walk is done
	}
	msgs, err := x.store.UnembeddedMessages(ctx, x.emb.Model(), x.since, EmbedBatch)
	if err == nil && len(msgs) < EmbedBatch {
		x.since, x.next = x.next, time.Time{} // everything up to now is found
	}
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	vs, err := x.embed(ctx, msgs)
	if err != nil {
		return 0, err
	}
	// Stored even when ctx ends meanwhile (a shutdown): the texts were
	// embedded, and are not sent again after a restart.
	return len(msgs), x.store.PutEmbeddings(context.WithoutCancel(ctx), x.emb.Model(), vs)
}

// embed returns the vectors of msgs. A message with no text gets an empty
// vector without asking; when the endpoint refuses a batch, each of its
// texts is sent alone, and those it refuses alone get an empty vector.
func (x *Indexer) embed(ctx context.Context, msgs []agentik.MessageText) ([]agentik.MessageVector, error) {
	vs := make([]agentik.MessageVector, len(msgs))
	var texts []string
	var at []int
	for i, m := range msgs {
		vs[i].ID = m.ID
		if m.Text != "" {
			texts, at = append(texts, m.Text), append(at, i)
		}
	}
	if len(texts) == 0 {
		return vs, nil
	}
	vecs, err := x.emb.Embed(ctx, texts, EmbedTries, EmbedTimeout)
	if errors.Is(err, errRefused) && len(texts) > 1 {
		vecs, err = x.embedEach(ctx, texts)
	}
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		vs[i].Vector = vecs[j]
	}
	return vs, nil
}

// embedEach embeds each text alone: nil for one the endpoint refuses.
func (x *Indexer) embedEach(ctx context.Context, texts []string) ([][]float32, error) {
	vecs := make([][]float32, len(texts))
	for i, t := range texts {
		v, err := x.emb.Embed(ctx, []string{t}, EmbedTries, EmbedTimeout)
		if errors.Is(err, errRefused) {
			x.log.Warn("semantic recall: the endpoint refuses a message; it is left out of search by meaning", "error", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		vecs[i] = v[0]
	}
	return vecs, nil
}
