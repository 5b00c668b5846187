package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/demollm"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/sqlite"
)

// TestNewWantsATemporalStore: the caller chooses where temporal
// conversations live, as it chooses the durable store; an engine without
// one is refused at New, and the same options with one are accepted.
func TestNewWantsATemporalStore(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentik.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := engine.Options{Store: st, Bus: bus.New(), LLM: demollm.New()}
	if _, err := engine.New(o); err == nil || !strings.Contains(err.Error(), "Temporal") {
		t.Fatalf("New without Temporal: %v, want an error naming it", err)
	}
	o.Temporal = memstore.New()
	if _, err := engine.New(o); err != nil {
		t.Fatalf("New with Temporal: %v", err)
	}
}
