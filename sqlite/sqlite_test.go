package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
)

func open(t *testing.T) agentik.Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentik.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, open)
}
