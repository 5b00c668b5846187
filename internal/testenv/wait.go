package testenv

import (
	"context"
	"testing"
	"time"
)

// Wait returns the context a test that waits on events (a stream's end, a
// thousand subscribers' last event) bounds its waits with. It is no bound
// on how long the awaited work may take on a busy machine: that is go
// test's -timeout, which this context ends a little before, so that the
// test reports what it was still waiting for instead of dying in the
// timeout's panic. It ends with the test too.
func Wait(t *testing.T) context.Context {
	ctx := t.Context()
	dl, ok := t.Deadline()
	if !ok {
		return ctx
	}
	// The margin leaves time to report and clean up: a tenth of what is
	// left, at most 30 s.
	margin := min(time.Until(dl)/10, 30*time.Second)
	ctx, cancel := context.WithDeadline(ctx, dl.Add(-margin))
	t.Cleanup(cancel)
	return ctx
}
