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

// TestShared runs the two-handle checks on two Stores over one file, as two
// processes sharing it would.
func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (agentik.Store, agentik.Store) {
		path := filepath.Join(t.TempDir(), "agentik.db")
		return openPath(t, path), openPath(t, path)
	})
}

func TestAgents(t *testing.T) {
	storetest.RunAgents(t, func(t *testing.T) storetest.Agents {
		s := open(t).(*Store)
		return storetest.Agents{
			Base: s,
			For:  func(id string) agentik.Store { return s.ForAgent(id) },
			Adopt: func(t *testing.T, id string) int64 {
				n, err := s.AdoptConversations(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				return n
			},
		}
	})
}
