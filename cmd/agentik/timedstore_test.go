package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/telemetry"
)

// TestTimedStoreKeepsStoredJSONReplay: timing an engine's commits does not
// hide the store's stored-JSON replay (the engine finds it by assertion; a
// wrapper forwarding the Store interface alone made every replay decode and
// re-encode each event).
func TestTimedStoreKeepsStoredJSONReplay(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := agentik.Store(s).(agentik.EventJSONReader); !ok {
		t.Fatal("the SQLite store reads no stored JSON")
	}
	a := &app{metrics: telemetry.NewMetrics()}
	if _, ok := a.timedStore("agentik", s).(agentik.EventJSONReader); !ok {
		t.Fatal("the timed store hides EventsJSON")
	}
	if _, ok := a.timedStore("agentik", jsonless{s}).(agentik.EventJSONReader); ok {
		t.Fatal("the timed store claims EventsJSON its store lacks")
	}
}

type jsonless struct{ agentik.Store }
