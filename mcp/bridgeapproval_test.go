package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bridgeClient runs Bridge to e's server for alice and connects a local
// client to it over stdio pipes, at the revision desktop clients speak.
func bridgeClient(t *testing.T, e *serveEnv, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(serveCtx(t))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, inR, outW, BridgeOptions{URL: e.url, Token: "tok-alice", Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		outW.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolPrevious})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		cancel()
		<-done
	})
	return cs
}

// TestBridgeApproval: a desktop client behind `agentik mcp` that takes
// elicitations is asked about a call waiting for approval (the bridge
// answers the server's input_required with it), and its answer resolves
// the call; one that does not is told where to answer.
func TestBridgeApproval(t *testing.T) {
	e := approvalEnv(t)
	ctx := serveCtx(t)
	// Two rounds: the turn parks again after the first answer.
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("It is noon."))
	var asked []string
	// A 2025-11-25 client as other SDKs' are: it knows nothing of
	// input_required results (the Go SDK's would answer one itself).
	cs := bridgeClient(t, e, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
	}, MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
	res, out := ask(t, ctx, cs, map[string]any{"message": "time?"}, nil)
	if res.IsError || out.Answer != "It is noon." || len(asked) != 2 || !strings.Contains(asked[1], "current_time") {
		t.Fatalf("%v %q, asked %q", res.IsError, resultText(res), asked)
	}
	if got := types(e.journal("alice", out.ConversationID)); got != "user_message,tool_call,tool_result,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", got)
	}

	// The turns below stay parked: the model is asked once each.
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)))
	mute := bridgeClient(t, e, nil) // declares no elicitation
	res, _ = ask(t, ctx, mute, map[string]any{"message": "time?", "new_conversation": true}, nil)
	if !res.IsError || !strings.Contains(resultText(res), "cannot answer approvals") {
		t.Fatalf("a client that cannot be asked: %v %q", res.IsError, resultText(res))
	}

	// A client whose elicitation fails is no answer: it is told where else
	// to answer, not handed a protocol error.
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)))
	broken := bridgeClient(t, e, &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return nil, errors.New("the dialog could not be shown")
	}, MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
	res, _ = ask(t, ctx, broken, map[string]any{"message": "time?", "new_conversation": true}, nil)
	if !res.IsError || !strings.Contains(resultText(res), "cannot answer approvals") {
		t.Fatalf("a client whose elicitation fails: %v %q", res.IsError, resultText(res))
	}
}
