package agui

import (
	"strconv"
	"strings"
)

// Dialect is the generation of the AG-UI schema a client validates events
// against. The facade builds every event in the 1.0 form; a run of a client
// that speaks an older dialect has its events rewritten, as the last step
// before the wire, into shapes that client's schema accepts.
//
// Clients validate strictly where it matters: @ag-ui/core 0.0.x (0.0.59 is
// what @copilotkit/runtime 1.75 and @copilotkit/react-core 1.74 pin) declares
// RUN_FINISHED.outcome as a strict union of {type:"success"} and
// {type:"interrupt", interrupts}, so the 1.0 shapes
// {type:"success", pendingToolCallIds} and {type:"cancelled"} fail its
// ZodError check and the run fails in the browser.
type Dialect int

const (
	// Dialect10 is AG-UI 1.x: @ag-ui/client 1.0.0 sends
	// RunAgentInput.protocolVersion "1.0". The facade's native form.
	Dialect10 Dialect = iota
	// Dialect00 is the pre-1.0 schema of @ag-ui/core 0.0.x, whose
	// RunAgentInput has no protocolVersion field (so its HttpAgent never
	// sends one).
	Dialect00
)

func (d Dialect) String() string {
	if d == Dialect00 {
		return "0.0"
	}
	return "1.0"
}

// DialectOf tells which dialect a run's client speaks, from
// RunAgentInput.protocolVersion: absent (or "0.<n>") is the pre-1.0 schema;
// any other value (the field exists only from 1.0 on) is 1.0, the newest
// dialect the facade speaks.
func DialectOf(in RunInput) Dialect {
	v := strings.TrimSpace(in.ProtocolVersion)
	if v == "" {
		return Dialect00
	}
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err == nil && n == 0 {
		return Dialect00
	}
	return Dialect10
}

// adapt rewrites one event (built in the 1.0 form) for the dialect. It
// returns ev itself for Dialect10.
func (d Dialect) adapt(ev Event) Event {
	if d != Dialect00 {
		return ev
	}
	if ev.Type == RunFinished && ev.Outcome != nil {
		switch ev.Outcome.Type {
		case OutcomeSuccess, OutcomeCancelled, OutcomeInterrupt:
			// 0.0.x knows no pendingToolCallIds and no "cancelled": an
			// absent outcome is success in every 0.0.x (older ones have no
			// outcome at all). A frontend tool is still run: the client
			// finds the call without a result in its messages. A cancelled
			// run keeps what was shown, as a finished one. A run that waits
			// for approvals ends the same way: the pending calls are the
			// calls without a result, answered with a tool message each,
			// as frontend tools are (approval.go) — 0.0.59's schema would
			// take an interrupt outcome, but no 0.0.x client acts on it
			// and older ones strip it.
			ev.Outcome = nil
		}
	}
	return ev
}
