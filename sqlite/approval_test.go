package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentik/agentik"
)

// TestApprovalAnsweredOnce: a second approval_resolved event for one call
// is refused (EConflict) and changes nothing; ApprovalEvents reads only the
// approval events.
func TestApprovalAnsweredOnce(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}
	if _, err := st.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	yes := true
	m := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("hi")}}
	req := agentik.Event{Date: agentik.Now(), Type: agentik.EvApprovalRequested, CallID: "x", Name: "t", Arguments: agentik.RawJSON(`{}`)}
	res := agentik.Event{Date: agentik.Now(), Type: agentik.EvApprovalResolved, CallID: "x", Approved: &yes, By: "o"}
	if _, _, err := st.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{agentik.MessageEvent(&m), req, res}}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.LastCursor(ctx, c.ID)
	if _, _, err := st.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{res}}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer: %v", err)
	}
	if after, _ := st.LastCursor(ctx, c.ID); after != before {
		t.Fatal("a refused answer changed the conversation")
	}
	evs, err := st.ApprovalEvents(ctx, c.ID, 0)
	if err != nil || len(evs) != 2 || evs[0].Type != agentik.EvApprovalRequested || evs[1].By != "o" || !*evs[1].Approved {
		t.Fatalf("approval events %+v %v", evs, err)
	}
	if evs, _ := st.ApprovalEvents(ctx, c.ID, evs[0].Cursor); len(evs) != 1 {
		t.Fatalf("after the first: %+v", evs)
	}
}
