package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func approvalEnv(t *testing.T) *serveEnv {
	return newServeEnvWith(t, func(o *engine.Options) {
		p, err := agentik.ParseApprovalPolicy("current_time=ask")
		if err != nil {
			t.Fatal(err)
		}
		o.Approval = p
	})
}

// TestServeApprovalInputRequired: a 2026-07-28 client that takes
// elicitations is asked through an input_required result (SEP-2322) — the
// official SDK client answers it with its elicitation handler and retries
// — and its answers resolve the calls.
func TestServeApprovalInputRequired(t *testing.T) {
	e := approvalEnv(t)
	ctx := serveCtx(t)
	for _, answer := range []struct {
		action   string
		approved bool
		want     string
	}{{"accept", true, "It is noon."}, {"accept", false, "Not allowed."}, {"decline", false, "Declined."}} {
		e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text(answer.want))
		var mu sync.Mutex
		var asked []string
		cs := e.connect("tok-alice", ProtocolCurrent, func(o *sdk.ClientOptions) {
			o.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, r.Params.Message)
				mu.Unlock()
				return &sdk.ElicitResult{Action: answer.action, Content: map[string]any{"approved": answer.approved, "reason": "no clocks"}}, nil
			}
		})
		res, out := ask(t, ctx, cs, map[string]any{"message": "time?", "new_conversation": true}, nil)
		if res.IsError || out.Answer != answer.want || len(asked) != 1 || !strings.Contains(asked[0], "current_time") {
			t.Fatalf("%+v: %v %q, asked %q", answer, res.IsError, resultText(res), asked)
		}
		msgs := e.journal("alice", out.ConversationID)
		if got := types(msgs); got != "user_message,tool_call,tool_result,assistant_message" {
			t.Fatalf("journal %s", got)
		}
		if denied := msgs[2].IsError; denied == answer.approved {
			t.Fatalf("%+v: tool result %+v", answer, msgs[2])
		}
	}
}

// TestServeInputRequiredWire drives the round trips by hand: the first
// result is input_required with one elicitation per pending call and a
// requestState; a retry without answers asks again; a forged state is a
// tool error; the answered retry ends the turn.
func TestServeInputRequiredWire(t *testing.T) {
	e := approvalEnv(t)
	ctx := serveCtx(t)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("It is noon."))
	cs := e.connect("tok-alice", ProtocolCurrent, func(o *sdk.ClientOptions) {
		o.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true}
		o.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the server sent an elicitation request at 2026-07-28")
			return nil, nil
		}
	})
	args := map[string]any{"message": "time?", "new_conversation": true}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("first result: needs input %v, %d requests, state %q, content %v", res.NeedsInput(), len(res.InputRequests), res.RequestState, res.Content)
	}
	var callID string
	for id, r := range res.InputRequests {
		callID = id
		if p, ok := r.(*sdk.ElicitParams); !ok || !strings.Contains(p.Message, "current_time") {
			t.Fatalf("input request %T %+v", r, r)
		}
	}
	// No answer yet: asked again, same call.
	again, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: args, RequestState: res.RequestState})
	if err != nil || !again.NeedsInput() || again.InputRequests[callID] == nil {
		t.Fatalf("retry without answers: %v %+v", err, again)
	}
	// A forged state: a tool error, nothing resolved.
	bad, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: args, RequestState: "not-a-state",
		InputResponses: sdk.InputResponseMap{callID: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}}})
	if err != nil || !bad.IsError || !strings.Contains(resultText(bad), "requestState") {
		t.Fatalf("forged state: %v %+v", err, bad)
	}
	// Bob cannot answer alice's turn with her state.
	bob := e.connect("tok-bob", ProtocolCurrent, func(o *sdk.ClientOptions) { o.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true} })
	theft, err := bob.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: args, RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{callID: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}}})
	if err != nil || !theft.IsError || !strings.Contains(resultText(theft), "not found") {
		t.Fatalf("bob with alice's state: %v %+v", err, theft)
	}
	done, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: args, RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{callID: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}}})
	if err != nil || done.IsError || done.NeedsInput() || resultText(done) != "It is noon." {
		st, _ := decodeAskState(res.RequestState)
		for _, m := range e.journal("alice", st.Conversation) {
			t.Logf("%s %s %s %s", m.Type, m.CallID, m.Name, m.ReplyTo)
		}
		t.Fatalf("answered retry: %v %+v", err, done)
	}
}

// FuzzDecodeAskState: any requestState either is refused or names valid
// ids.
func FuzzDecodeAskState(f *testing.F) {
	f.Add(askState{Conversation: agentik.NewID(), Message: agentik.NewID(), Seq: 3}.encode())
	f.Add("")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, raw string) {
		s, ok := decodeAskState(raw)
		if ok && (!agentik.ValidID(s.Conversation) || !agentik.ValidID(s.Message) || s.Seq <= 0) {
			t.Fatalf("accepted %+v", s)
		}
	})
}
