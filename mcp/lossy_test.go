package mcp

import (
	"testing"

	"github.com/agentik/agentik/internal/stacktest"
)

// An ask whose subscriber lost deltas (the bus had no room for them) still
// streams the answer's text whole in its progress notifications, over both
// protocol revisions: the rest comes from the stored message, with no gap
// and no repeat.
func TestServeAskLostDeltasArriveWhole(t *testing.T) {
	e := newServeEnvWith(t, stacktest.LoseDeltas)
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			reply, want := stacktest.LossyAnswer(40)
			e.llm.Enqueue(reply)
			prog := newProgressLog()
			cs := e.connect("tok-alice", v, withProgress(prog))
			res, out := ask(t, serveCtx(t), cs, map[string]any{"message": "Count"}, "p-lossy")
			if res.IsError || out.Answer != want {
				t.Fatalf("result %v %q", res.IsError, out.Answer)
			}
			prog.waitFor(t, want)
		})
	}
}
