package engine_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
)

// TestSharedStateConcurrentPatches: patches made at the same time in one
// process are applied one after the other, none lost, each a state_updated
// event whose state is the one its patch made.
func TestSharedStateConcurrentPatches(t *testing.T) {
	h := newHarness(t)
	c, s := h.conversation()
	if _, err := c.PutSharedState(h.ctx, agentik.RawJSON(`{"items":[]}`)); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			patch := fmt.Sprintf(`[{"op":"add","path":"/items/-","value":%d}]`, i)
			if _, err := c.PatchSharedState(h.ctx, agentik.RawJSON(patch)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st, err := c.SharedState(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Items []int }
	if err := json.Unmarshal(st, &got); err != nil || len(got.Items) != n {
		t.Fatalf("state %s after %d concurrent patches: %v", st, n, err)
	}
	seen := map[int]bool{}
	for _, v := range got.Items {
		seen[v] = true
	}
	if len(seen) != n {
		t.Fatalf("items %v: some patch was lost or doubled", got.Items)
	}
	// The events: the put, then one per patch, the last with the state.
	evs := until(t, s, func(ev agentik.Event) bool {
		var st struct{ Items []int }
		json.Unmarshal(ev.State, &st)
		return ev.Type == agentik.EvStateUpdated && len(st.Items) == n
	})
	updates := 0
	for _, ev := range evs {
		if ev.Type == agentik.EvStateUpdated {
			updates++
		}
	}
	if updates != n+1 || string(evs[len(evs)-1].State) != string(st) {
		t.Fatalf("%d state_updated events, want %d; last %s, state %s", updates, n+1, evs[len(evs)-1].State, st)
	}
}

// TestSharedStateRefusalsChangeNothing: a patch that does not apply, a
// state that is no object or too large, and a change to the same state
// store nothing and publish no event.
func TestSharedStateRefusalsChangeNothing(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	if _, err := c.PutSharedState(h.ctx, agentik.RawJSON(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	page, err := c.Messages(h.ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	before := page.Cursor
	big := `{"x":"` + strings.Repeat("y", agentik.MaxSharedState) + `"}`
	for _, try := range []struct {
		put, patch string
		code       string
	}{
		{patch: `[{"op":"remove","path":"/b"}]`, code: agentik.EInvalid},
		{patch: `[{"op":"replace","path":"","value":1}]`, code: agentik.EInvalid},
		{patch: `{"op":"add"}`, code: agentik.EInvalid},
		{put: `[1]`, code: agentik.EInvalid},
		{put: `not json`, code: agentik.EInvalid},
		{put: big, code: agentik.ETooLarge},
		{put: `{"a":1.0}`},                                  // the same state: numbers by value
		{patch: `[{"op":"replace","path":"/a","value":1}]`}, // the same state
	} {
		var err error
		if try.put != "" {
			_, err = c.PutSharedState(h.ctx, agentik.RawJSON(try.put))
		} else {
			_, err = c.PatchSharedState(h.ctx, agentik.RawJSON(try.patch))
		}
		if agentik.ErrorCode(err) != try.code && !(try.code == "" && err == nil) {
			t.Fatalf("%.60s%s: %v, want %q", try.put, try.patch, err, try.code)
		}
		if st, _ := c.SharedState(h.ctx); string(st) != `{"a":1}` {
			t.Fatalf("%.60s%s changed the state to %s", try.put, try.patch, st)
		}
	}
	page, err = c.Messages(h.ctx, agentik.MessagesRequest{})
	if err != nil || page.Cursor != before {
		t.Fatalf("refused or empty changes stored events: cursor %d → %d (%v)", before, page.Cursor, err)
	}
	// Emptied, the state is gone from the store and reads as {}.
	if st, err := c.PutSharedState(h.ctx, agentik.RawJSON(`{}`)); err != nil || string(st) != "{}" {
		t.Fatalf("put {}: %s, %v", st, err)
	}
	if v, err := h.store.State(h.ctx, c.ID(), agentik.SharedStateKey); err != nil || v != nil {
		t.Fatalf("an empty state is kept as %s, %v", v, err)
	}
}

// TestKeptState: a door's state keys are kept with the conversation (read
// back, removed with nil), leave the shared state as it was, and the
// shared state's own key is refused.
func TestKeptState(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	k, ok := c.(agentik.StateKeeper)
	if !ok {
		t.Fatal("an engine conversation is no StateKeeper")
	}
	st := k.KeptState()
	if err := st.SetState(h.ctx, "door.x", agentik.RawJSON(`["a"]`)); err != nil {
		t.Fatal(err)
	}
	if v, err := st.State(h.ctx, "door.x"); err != nil || string(v) != `["a"]` {
		t.Fatalf("read back %s: %v", v, err)
	}
	if s, err := c.SharedState(h.ctx); err != nil || string(s) != "{}" {
		t.Fatalf("shared state %s: %v", s, err)
	}
	if err := st.SetState(h.ctx, agentik.SharedStateKey, agentik.RawJSON(`{"a":1}`)); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("the shared state's key: %v", err)
	}
	if _, err := st.State(h.ctx, agentik.SharedStateKey); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("reading the shared state's key: %v", err)
	}
	if err := st.SetState(h.ctx, "door.x", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := st.State(h.ctx, "door.x"); err != nil || v != nil {
		t.Fatalf("after removal %s: %v", v, err)
	}
}
