package langgraph

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzRunRequest: whatever a client sends as a run's body, decoding and
// checking it never panics, and what passes the checks converts to content
// the core's own validation takes or refuses cleanly.
func FuzzRunRequest(f *testing.F) {
	f.Add([]byte(`{"assistant_id":"a","input":{"messages":[{"type":"human","content":"hi"}]},"stream_mode":["values","messages-tuple"]}`))
	f.Add([]byte(`{"command":{"resume":{"decisions":[{"type":"edit","edited_action":{"name":"x","args":{}}}]}}}`))
	f.Add([]byte(`{"input":{"messages":[{"type":"human","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]},"stream_mode":"updates"}`))
	f.Add([]byte(`{"checkpoint":{"checkpoint_id":"00000000-0000-0000-0000-000000000003"},"multitask_strategy":"rollback"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var q runRequest
		if json.Unmarshal(body, &q) != nil {
			return
		}
		if q.validate() != nil {
			return
		}
		if _, err := q.streamModes(); err != nil && agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("stream_mode error %v", err)
		}
		parseCheckpoint("t", q.checkpoint())
		if q.Input != nil {
			for _, m := range q.Input.Messages {
				c, err := fromLangChain(m)
				if err != nil {
					if agentik.ErrorCode(err) != agentik.EInvalid {
						t.Fatalf("content error %v", err)
					}
					continue
				}
				_ = agentik.ValidateContent(c)
			}
		}
		if q.Command != nil && isSet(q.Command.Resume) {
			pend := []agentik.PendingApproval{{CallID: "c1", Name: "x"}}
			if ds, err := decisions(q.Command.Resume, pend); err == nil {
				resolutions(ds, pend)
			}
		}
	})
}

// TestCheckpointIDsSortByAge: a thread's checkpoint ids compare as strings
// in the order of their seqs, as LangGraph's clients compare them; each
// parses back on its thread only, and only as it was written.
func TestCheckpointIDsSortByAge(t *testing.T) {
	const tid, other = "c0ffee00-0000-4000-8000-000000000001", "c0ffee00-0000-4000-8000-000000000002"
	prev := checkpointID(tid, 0)
	if _, ok := parseCheckpoint(tid, prev); !ok {
		t.Fatalf("the empty thread's checkpoint %s does not parse", prev)
	}
	for _, seq := range []int64{1, 2, 9, 10, 15, 16, 255, 256, 4096, 1 << 40} {
		id := checkpointID(tid, seq)
		if id <= prev {
			t.Fatalf("%s (seq %d) does not sort after %s", id, seq, prev)
		}
		if back, ok := parseCheckpoint(tid, id); !ok || back != seq {
			t.Fatalf("%s parses as %d, %v", id, back, ok)
		}
		if _, ok := parseCheckpoint(other, id); ok {
			t.Fatalf("%s (thread %s) parsed on thread %s", id, tid, other)
		}
		prev = id
	}
	one := checkpointID(tid, 1)
	for _, bad := range []string{"", "x", one + "0", one[:len(one)-1] + "g", one[:len(one)-12] + "+00000000001",
		strings.ToUpper(checkpointID(tid, 10)), "00000000-0000-0000-0000-000000000001", checkpointID(other, 1)} {
		if _, ok := parseCheckpoint(tid, bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}
