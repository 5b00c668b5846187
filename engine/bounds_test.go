package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
)

// TestMessageContextIsBounded: a message's context (origin and metadata)
// is bounded like its text, and counts in the temporal budget (issue 44.4:
// a 15.2 MB metadata message was stored while text is capped at 1 MiB, and
// metadata escaped the temporal budget).
func TestMessageContextIsBounded(t *testing.T) {
	h := newHarness(t, func(o *engine.Options) { o.TemporalBytes = 200 << 10 })
	c, _ := h.conversation()
	send := func(c agentik.Conversation, meta map[string]string) error {
		_, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")},
			Context: &agentik.MessageContext{Metadata: meta}})
		return err
	}
	big := map[string]string{"k": strings.Repeat("x", agentik.MaxContextBytes)}
	many := map[string]string{}
	for i := range agentik.MaxMetadataEntries + 1 {
		many[fmt.Sprint(i)] = "v"
	}
	for name, meta := range map[string]map[string]string{"large": big, "many keys": many} {
		if err := send(c, meta); agentik.ErrorCode(err) != agentik.ETooLarge {
			t.Errorf("%s metadata: %v", name, err)
		}
	}
	if msgs := journal(t, c); len(msgs) != 0 {
		t.Fatalf("a refused message was stored: %s", journalTypes(msgs))
	}

	// A temporal conversation: 60 KiB of metadata per message counts; the
	// fourth message passes the 200 KiB budget.
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Temporal: true})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := h.eng.Conversation(h.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	meta := map[string]string{"k": strings.Repeat("m", 60<<10)}
	for i := range 3 {
		h.llm.Enqueue(llmtest.Text("ok"))
		if err := send(tc, meta); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	if err := send(tc, meta); agentik.ErrorCode(err) != agentik.ETooLarge {
		t.Fatalf("fourth message past the temporal budget: %v", err)
	}
}
