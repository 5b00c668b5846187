package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// OpenAILatency is the openai phase: the added latency of a streamed turn
// through the OpenAI-compatible door — Chat Completions and Responses —,
// through the LangGraph API (runs/stream) and through the native API,
// interleaved in the same run against the same server, each turn followed
// by a direct replay of its model requests.
type OpenAILatency struct {
	Native    DoorLatency `json:"native"`
	Chat      DoorLatency `json:"chat_completions"`
	Responses DoorLatency `json:"responses"`
	LangGraph DoorLatency `json:"langgraph"`
	// ChatOverNativeP50Ms, ResponsesOverNativeP50Ms and
	// LangGraphOverNativeP50Ms are each door's added p50 minus the native
	// API's.
	ChatOverNativeP50Ms      float64 `json:"chat_over_native_p50_ms"`
	ResponsesOverNativeP50Ms float64 `json:"responses_over_native_p50_ms"`
	LangGraphOverNativeP50Ms float64 `json:"langgraph_over_native_p50_ms"`
}

// DoorLatency is one door's streamed turns against their direct replays.
type DoorLatency struct {
	Agentik    Dist    `json:"agentik"`
	Direct     Dist    `json:"direct"`
	AddedP50Ms float64 `json:"added_p50_ms"`
	AddedP99Ms float64 `json:"added_p99_ms"`
}

// openaiTurn runs one streamed turn through one door of conversation conv.
type openaiTurn func(ctx context.Context, conv string) error

// openai (phase): native, Chat Completions and Responses turns in turn.
func (r *runner) openai(ctx context.Context) (err error) {
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	model, err := a.firstModel(ctx)
	if err != nil {
		return err
	}
	var es *eventStream
	defer func() {
		if es != nil {
			es.Close()
		}
	}()
	doors := []struct {
		name string
		turn openaiTurn
		conv string
		got  [2][]time.Duration // agentik, direct
	}{
		{name: "native", turn: func(ctx context.Context, conv string) error {
			if err := a.send(ctx, conv, promptPlain); err != nil {
				return err
			}
			_, err := es.waitEnd()
			return err
		}},
		{name: "chat", turn: func(ctx context.Context, conv string) error { return a.chatTurn(ctx, model, conv) }},
		{name: "responses", turn: func(ctx context.Context, conv string) error { return a.responsesTurn(ctx, model, conv) }},
		{name: "langgraph", turn: func(ctx context.Context, conv string) error { return a.langgraphTurn(ctx, model, conv) }},
	}
	for i := range r.plan.LatencyWarmup + r.plan.LatencyTurns {
		if i%r.plan.RotateEvery == 0 {
			for d := range doors {
				if doors[d].conv, err = a.createConversation(ctx, "openai "+doors[d].name); err != nil {
					return err
				}
			}
			if es != nil {
				es.Close()
			}
			if es, err = a.events(ctx, doors[0].conv, -1); err != nil {
				return err
			}
		}
		for d := range doors {
			turn, direct, err := r.timedTurn(ctx, doors[d].turn, doors[d].conv)
			if err != nil {
				return fmt.Errorf("%s: %w", doors[d].name, err)
			}
			if i >= r.plan.LatencyWarmup {
				doors[d].got[0] = append(doors[d].got[0], turn)
				doors[d].got[1] = append(doors[d].got[1], direct)
			}
		}
	}
	res := &OpenAILatency{}
	for d, out := range []*DoorLatency{&res.Native, &res.Chat, &res.Responses, &res.LangGraph} {
		*out = DoorLatency{Agentik: dist(doors[d].got[0]).rounded(), Direct: dist(doors[d].got[1]).rounded()}
		out.AddedP50Ms = round3(out.Agentik.P50Ms - out.Direct.P50Ms)
		out.AddedP99Ms = round3(out.Agentik.P99Ms - out.Direct.P99Ms)
		r.logf("%s streamed turn: p50 %.3f ms | direct p50 %.3f ms | added p50 %.3f ms p99 %.3f ms", doors[d].name, out.Agentik.P50Ms, out.Direct.P50Ms, out.AddedP50Ms, out.AddedP99Ms)
	}
	res.ChatOverNativeP50Ms = round3(res.Chat.AddedP50Ms - res.Native.AddedP50Ms)
	res.ResponsesOverNativeP50Ms = round3(res.Responses.AddedP50Ms - res.Native.AddedP50Ms)
	res.LangGraphOverNativeP50Ms = round3(res.LangGraph.AddedP50Ms - res.Native.AddedP50Ms)
	r.logf("added p50 over the native API: chat completions %+.3f ms, responses %+.3f ms, langgraph %+.3f ms", res.ChatOverNativeP50Ms, res.ResponsesOverNativeP50Ms, res.LangGraphOverNativeP50Ms)
	r.res.OpenAI = res
	return nil
}

// timedTurn runs one turn, then replays the model requests it made
// directly: the turn's time and the replay's.
func (r *runner) timedTurn(ctx context.Context, turn openaiTurn, conv string) (time.Duration, time.Duration, error) {
	r.model.startRecording()
	defer r.model.stopRecording()
	r.model.take()
	t0 := time.Now()
	if err := turn(ctx, conv); err != nil {
		return 0, 0, err
	}
	d := time.Since(t0)
	bodies := r.model.take()
	if len(bodies) != 1 {
		return 0, 0, fmt.Errorf("the turn made %d model calls, want 1", len(bodies))
	}
	t1 := time.Now()
	if _, err := r.model.direct(ctx, r.hc, bodies[0]); err != nil {
		return 0, 0, err
	}
	return d, time.Since(t1), nil
}

// firstModel is the first model GET /v1/models lists: the default agent.
func (a *api) firstModel(ctx context.Context) (string, error) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := a.do(ctx, http.MethodGet, "/v1/models", nil, http.StatusOK, &list); err != nil {
		return "", err
	}
	if len(list.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models lists no model")
	}
	return list.Data[0].ID, nil
}

// chatTurn is one streamed chat completion in conversation conv (named by
// the header), read to data: [DONE].
func (a *api) chatTurn(ctx context.Context, model, conv string) error {
	body := map[string]any{"model": model, "stream": true, "messages": []map[string]string{{"role": "user", "content": promptPlain}}}
	return a.streamTo(ctx, "/v1/chat/completions", body, conv, func(typ string, data []byte) bool { return string(data) == "[DONE]" })
}

// responsesTurn is one streamed response in conversation conv, read to
// response.completed.
func (a *api) responsesTurn(ctx context.Context, model, conv string) error {
	body := map[string]any{"model": model, "stream": true, "input": promptPlain, "conversation": conv}
	return a.streamTo(ctx, "/v1/responses", body, "", func(typ string, data []byte) bool { return typ == "response.completed" })
}

// langgraphTurn is one streamed LangGraph run on thread conv (the same
// conversation), read to its end event.
func (a *api) langgraphTurn(ctx context.Context, model, conv string) error {
	body := map[string]any{"assistant_id": model, "stream_mode": []string{"messages-tuple"},
		"input": map[string]any{"messages": []map[string]string{{"type": "human", "content": promptPlain}}}}
	return a.streamTo(ctx, "/langgraph/threads/"+conv+"/runs/stream", body, "", func(typ string, data []byte) bool { return typ == "end" })
}

// streamTo posts body and reads the event stream until done says so.
func (a *api) streamTo(ctx context.Context, path string, body any, conv string, done func(typ string, data []byte) bool) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if conv != "" {
		req.Header.Set("X-Agentik-Conversation-Id", conv)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	rd := newSSEReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			return fmt.Errorf("POST %s: stream: %w", path, err)
		}
		if ev.Type == "error" || bytes.HasPrefix(ev.Data, []byte(`{"error"`)) {
			return fmt.Errorf("%w: %s", errTurnFailed, ev.Data)
		}
		if done(ev.Type, ev.Data) {
			return nil
		}
	}
}
