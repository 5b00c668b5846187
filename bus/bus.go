// Package bus is the in-process agentik.Bus: it fans events out to the live
// subscribers of one process. It is agentik.LocalBus under its historical
// name; see there for the delivery rules.
package bus

import "github.com/agentik/agentik"

// DefaultBuffer is how many events a subscriber may fall behind by.
const DefaultBuffer = agentik.DefaultBusBuffer

// Bus is an in-process event fan-out. The zero value is not usable; call New.
type Bus = agentik.LocalBus

// New returns a Bus with DefaultBuffer per subscriber.
func New() *Bus { return agentik.NewLocalBus(DefaultBuffer) }

// NewBuffered returns a Bus whose subscribers buffer n events (at least one).
func NewBuffered(n int) *Bus { return agentik.NewLocalBus(max(n, 1)) }
