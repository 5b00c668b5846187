package agui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
)

// A run may carry several new messages: they are one turn's input (one
// stored message, one answer, shown again as the messages they were), and a
// message that cannot be taken refuses the whole run before anything is
// stored.
func TestRunWithSeveralMessages(t *testing.T) {
	e := newEnv(t, func(_ *engine.Options, o *Options) { o.IfBusy = agentik.BusyReject })
	e.llm.Enqueue(llmtest.Text("one"), llmtest.Text("two"))
	thread := "5f0c9a7e-1111-4e7a-9a51-3f2d7c9e8b10"
	conv := ConversationID("", thread)
	two := `{"threadId":"` + thread + `","runId":"r1","messages":[
		{"id":"u1","role":"user","content":"first"},
		{"id":"u2","role":"user","content":"second"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
	if r := e.post(two); r.status != http.StatusOK {
		t.Fatalf("two messages with policy reject: %d %s", r.status, r.body)
	}
	msgs := e.journal(conv)
	if journalTypes(msgs) != "user_message,assistant_message" || agentik.JoinText(msgs[0].Content) != "firstsecond" {
		t.Fatalf("journal %s %+v", journalTypes(msgs), msgs)
	}
	if n := len(e.llm.Requests()); n != 1 {
		t.Fatalf("%d model calls for one run", n)
	}
	snap := e.post(`{"threadId":"` + thread + `","runId":"r0","messages":[]}`)
	if !strings.Contains(string(snap.body), `{"id":"u1","role":"user","content":"first"},{"id":"u2","role":"user","content":"second"}`) {
		t.Fatalf("snapshot %s", snap.body)
	}
	image := `{"threadId":"` + thread + `","runId":"r2","messages":[
		{"id":"u3","role":"user","content":"third"},
		{"id":"u4","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"iVBORw0KGgo="}]}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
	if r := e.post(image); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("an image for a text-only model: %d %s", r.status, r.body)
	}
	if msgs := e.journal(conv); countType(msgs, agentik.MsgUser) != 1 {
		t.Fatalf("a refused run stored something: %s", journalTypes(msgs))
	}
}

func countType(msgs []agentik.Message, typ string) int {
	n := 0
	for _, m := range msgs {
		if m.Type == typ {
			n++
		}
	}
	return n
}
