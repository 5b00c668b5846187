package memstore

import (
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) agentik.Store {
		s := New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
