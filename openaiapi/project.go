package openaiapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentik/agentik"
)

// Response statuses.
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
	statusIncomplete = "incomplete"
	statusCancelled  = "cancelled"
)

// item is an output item as it goes on the wire.
type item = map[string]any

// streamEvent is one event of a response's stream, encoded as it is
// emitted. A text delta covers the sequence numbers after prev up to seq:
// one per character, so that the number after a text is the same however
// the text was cut into deltas, live or replayed from the log, and a
// stream resumed after any number can be cut exactly where the client
// stopped.
type streamEvent struct {
	seq  int64
	prev int64 // deltas: the number before the delta
	typ  string
	data []byte // the event's JSON
	// A delta's parts, to write it again cut (after).
	itemID string
	index  int
	delta  string
}

// textDelta is the event of a piece of the answer.
const textDelta = "response.output_text.delta"

// projector turns the events of one turn into a Responses response and
// its stream. The same events give the same numbers, so a stream replayed
// from the durable log continues the one a client lost.
type projector struct {
	resp   *response
	client map[string]bool // client tool names: their calls are function_call items
	label  string          // server_label of mcp_call items

	seq  int64
	mode string
	msg  *openMessage
	rs   *openMessage // the reasoning item being streamed
	// reasoned is the reasoning streamed in the current model call, so
	// that the answer's stored reasoning adds only what the stream lacks.
	reasoned strings.Builder
	calls    map[string]int // mcp_call items by call id: their output index
	out      []streamEvent
	done     bool
	buf      []byte // where the events are encoded
	// check, when set (tests), sees each event's body as a map and its
	// JSON as written.
	check func(body map[string]any, data []byte)
}

// openMessage is the message item being streamed.
type openMessage struct {
	index int
	id    string
	text  strings.Builder
}

func newProjector(resp *response, client map[string]bool, label string) *projector {
	return &projector{resp: resp, client: client, label: label, seq: -1, calls: map[string]int{}, buf: make([]byte, 0, 8<<10)}
}

// emit adds an event with the next number.
func (p *projector) emit(typ string, body map[string]any) {
	prev := p.seq
	p.seq++
	body["type"] = typ
	body["sequence_number"] = p.seq
	start := len(p.buf)
	b, ok := appendJSON(p.buf, body)
	if !ok {
		m, err := json.Marshal(body)
		if err != nil { // no value of a response fails to encode
			panic(err)
		}
		b = append(p.buf[:start], m...)
	}
	p.push(streamEvent{seq: p.seq, prev: prev, typ: typ}, b, start)
	if p.check != nil {
		p.check(body, p.out[len(p.out)-1].data)
	}
}

// emitDelta adds a delta of the item at index: as many numbers as
// characters.
func (p *projector) emitDelta(typ, itemID string, index int, delta string) {
	prev := p.seq
	p.seq += int64(utf8.RuneCountInString(delta))
	start := len(p.buf)
	b := appendDelta(p.buf, typ == reasoningDelta, itemID, index, delta, p.seq)
	p.push(streamEvent{seq: p.seq, prev: prev, typ: typ, itemID: itemID, index: index, delta: delta}, b, start)
	if p.check != nil {
		p.check(deltaBody(typ, itemID, index, delta, p.seq), p.out[len(p.out)-1].data)
	}
}

// push appends ev, whose JSON is b[start:] (b is p.buf grown): events are
// encoded one after the other in one buffer, until it is large.
func (p *projector) push(ev streamEvent, b []byte, start int) {
	ev.data = b[start:len(b):len(b)]
	p.buf = b
	if cap(p.buf) > 64<<10 {
		p.buf = nil // the events keep the old one
	}
	p.out = append(p.out, ev)
}

// deltaBody is a delta event as a map (what emitDelta writes).
func deltaBody(typ, itemID string, index int, delta string, seq int64) map[string]any {
	if typ == reasoningDelta {
		return map[string]any{"type": typ, "sequence_number": seq, "item_id": itemID, "output_index": index, "summary_index": 0, "delta": delta}
	}
	return map[string]any{"type": typ, "sequence_number": seq, "item_id": itemID, "output_index": index, "content_index": 0,
		"delta": delta, "logprobs": []any{}}
}

// begin emits response.created and response.in_progress.
func (p *projector) begin() {
	p.emit("response.created", map[string]any{"response": p.resp})
	p.emit("response.in_progress", map[string]any{"response": p.resp})
}

// drain returns the events emitted since the last drain.
func (p *projector) drain() []streamEvent {
	out := p.out
	p.out = nil
	return out
}

// itemID is the stable id of the output item at index.
func (p *projector) itemID(prefix string, index int) string {
	return fmt.Sprintf("%s_%s_%d_%d", prefix, p.resp.key.turn, p.resp.key.fromSeq, index)
}

// add appends it to the output and emits output_item.added; done, when
// set, emits output_item.done too.
func (p *projector) add(it item, done bool) int {
	idx := len(p.resp.Output)
	p.resp.Output = append(p.resp.Output, it)
	p.emit("response.output_item.added", map[string]any{"output_index": idx, "item": cloneItem(it, "in_progress")})
	if done {
		p.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
	}
	return idx
}

// cloneItem is it as first announced: in progress.
func cloneItem(it item, status string) item {
	c := make(item, len(it))
	for k, v := range it {
		c[k] = v
	}
	if _, ok := c["status"]; ok {
		c["status"] = status
	}
	if c["type"] == "message" {
		c["content"] = []any{}
	}
	return c
}

// openText opens the message item.
func (p *projector) openText() {
	if p.msg != nil {
		return
	}
	p.closeReasoning()
	p.msg = &openMessage{index: len(p.resp.Output)}
	p.msg.id = p.itemID("msg", p.msg.index)
	it := item{"type": "message", "id": p.msg.id, "status": "in_progress", "role": "assistant", "content": []any{}}
	p.resp.Output = append(p.resp.Output, it)
	p.emit("response.output_item.added", map[string]any{"output_index": p.msg.index, "item": cloneItem(it, "in_progress")})
	p.emit("response.content_part.added", map[string]any{"item_id": p.msg.id, "output_index": p.msg.index, "content_index": 0,
		"part": outputTextPart("")})
}

func outputTextPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// text streams a piece of the answer.
func (p *projector) text(s string) {
	if s == "" {
		return
	}
	p.openText()
	p.msg.text.WriteString(s)
	p.emitDelta(textDelta, p.msg.id, p.msg.index, s)
}

// reason streams a piece of the model's reasoning as the summary of a
// reasoning item (the events every client renders: both SDKs and the
// Vercel AI SDK know the summary events).
func (p *projector) reason(s string) {
	if s == "" {
		return
	}
	if p.rs == nil {
		p.rs = &openMessage{index: len(p.resp.Output)}
		p.rs.id = p.itemID("rs", p.rs.index)
		it := item{"type": "reasoning", "id": p.rs.id, "summary": []any{}}
		p.resp.Output = append(p.resp.Output, it)
		p.emit("response.output_item.added", map[string]any{"output_index": p.rs.index, "item": cloneItem(it, "in_progress")})
		p.emit("response.reasoning_summary_part.added", map[string]any{"item_id": p.rs.id, "output_index": p.rs.index, "summary_index": 0,
			"part": summaryPart("")})
	}
	p.rs.text.WriteString(s)
	p.reasoned.WriteString(s)
	p.emitDelta(reasoningDelta, p.rs.id, p.rs.index, s)
}

// reasoningDelta is the event of a piece of reasoning.
const reasoningDelta = "response.reasoning_summary_text.delta"

func summaryPart(text string) map[string]any {
	return map[string]any{"type": "summary_text", "text": text}
}

// closeReasoning ends the reasoning item, if one is open.
func (p *projector) closeReasoning() {
	m := p.rs
	if m == nil {
		return
	}
	p.rs = nil
	text := m.text.String()
	p.emit("response.reasoning_summary_text.done", map[string]any{"item_id": m.id, "output_index": m.index, "summary_index": 0, "text": text})
	part := summaryPart(text)
	p.emit("response.reasoning_summary_part.done", map[string]any{"item_id": m.id, "output_index": m.index, "summary_index": 0, "part": part})
	it := item{"type": "reasoning", "id": m.id, "summary": []any{part}}
	p.resp.Output[m.index] = it
	p.emit("response.output_item.done", map[string]any{"output_index": m.index, "item": it})
}

// closeText ends the message item (and a reasoning item), if one is open.
func (p *projector) closeText() {
	p.closeReasoning()
	m := p.msg
	if m == nil {
		return
	}
	p.msg = nil
	text := m.text.String()
	p.emit("response.output_text.done", map[string]any{"item_id": m.id, "output_index": m.index, "content_index": 0, "text": text, "logprobs": []any{}})
	part := outputTextPart(text)
	p.emit("response.content_part.done", map[string]any{"item_id": m.id, "output_index": m.index, "content_index": 0, "part": part})
	it := item{"type": "message", "id": m.id, "status": "completed", "role": "assistant", "content": []any{part}}
	p.resp.Output[m.index] = it
	p.emit("response.output_item.done", map[string]any{"output_index": m.index, "item": it})
}

// event feeds one event of the turn.
func (p *projector) event(ev agentik.Event) {
	if p.done {
		return
	}
	switch ev.Type {
	case agentik.EvStartReasoning, agentik.EvStartResponse:
		p.mode = ev.Type
	case agentik.EvAppendText:
		if p.mode == agentik.EvStartReasoning {
			p.reason(ev.Text)
		} else {
			p.text(ev.Text)
		}
	case agentik.EvToolCall:
		p.closeText()
		p.reasoned.Reset() // the next model call reasons anew
		p.toolCall(ev.Message)
	case agentik.EvToolResult, agentik.EvToolFailed:
		p.toolResult(ev.Message)
	case agentik.EvApprovalRequested:
		p.closeText()
		p.add(item{"type": "mcp_approval_request", "id": "mcpr_" + ev.CallID, "server_label": p.label, "name": ev.Name, "arguments": string(ev.Arguments)}, true)
	case agentik.EvAwaitingApproval:
		p.finish(statusCompleted, nil)
	case agentik.EvAssistantMessage:
		p.assistant(ev.Message)
	case agentik.EvError:
		p.closeText()
		p.resp.Error = &respError{Code: "server_error", Message: agentik.TurnErrorMessage(ev.Message.Code, ev.Message.Details)}
		p.finish(statusFailed, nil)
	case agentik.EvInterrupted:
		p.closeText()
		p.finish(statusCancelled, nil)
	case agentik.EvEnd:
		p.closeText()
		switch ev.Reason {
		case agentik.EndInterrupted:
			p.finish(statusCancelled, ev.Tokens)
		case agentik.EndError:
			p.resp.Error = &respError{Code: "server_error", Message: "the turn failed"}
			p.finish(statusFailed, ev.Tokens)
		default:
			p.finish(statusCompleted, ev.Tokens)
		}
	}
}

// toolCall adds a call: a function_call for a client tool, else an
// mcp_call that its result completes.
func (p *projector) toolCall(m *agentik.Message) {
	if p.client[m.Name] {
		id := "fc_" + m.CallID
		it := item{"type": "function_call", "id": id, "call_id": m.CallID, "name": m.Name, "arguments": string(m.Arguments), "status": "completed"}
		idx := len(p.resp.Output)
		p.resp.Output = append(p.resp.Output, it)
		p.emit("response.output_item.added", map[string]any{"output_index": idx, "item": cloneItem(item{"type": "function_call", "id": id, "call_id": m.CallID, "name": m.Name, "arguments": "", "status": ""}, "in_progress")})
		p.emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": idx, "delta": string(m.Arguments)})
		p.emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": string(m.Arguments)})
		p.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
		return
	}
	it := item{"type": "mcp_call", "id": "mcp_" + m.CallID, "server_label": p.label, "name": m.Name, "arguments": string(m.Arguments), "output": nil, "error": nil, "status": "in_progress"}
	p.calls[m.CallID] = p.add(it, false)
}

// toolResult completes an mcp_call.
func (p *projector) toolResult(m *agentik.Message) {
	if p.client[m.Name] {
		return // the client's own output: an input item, not output
	}
	idx, ok := p.calls[m.CallID]
	if !ok { // called before this response (an approved call)
		idx = p.add(item{"type": "mcp_call", "id": "mcp_" + m.CallID, "server_label": p.label, "name": m.Name, "arguments": "", "output": nil, "error": nil, "status": "in_progress"}, false)
	}
	delete(p.calls, m.CallID)
	it := p.resp.Output[idx]
	text := agentik.JoinText(m.Content)
	if m.IsError {
		it["error"], it["status"] = text, "failed"
	} else {
		it["output"], it["status"] = text, "completed"
	}
	p.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
}

// assistant ends the answer: the reasoning and the text the stream lacks
// (all of it when the events come from the journal: the same items and
// numbers as live), and the response's end unless the answer was cut off.
func (p *projector) assistant(m *agentik.Message) {
	rest, ok := strings.CutPrefix(m.Reasoning, p.reasoned.String())
	late := ok && rest != "" && p.msg != nil && p.rs == nil // the text is open already: the reasoning follows it
	if ok && !late {
		p.reason(rest)
	}
	p.reasoned.Reset()
	final := agentik.JoinText(m.Content)
	have := ""
	if p.msg != nil {
		have = p.msg.text.String()
	}
	if rest, ok := strings.CutPrefix(final, have); ok {
		p.text(rest)
	}
	p.closeText()
	if late {
		p.reason(rest)
		p.closeReasoning()
	}
	switch {
	case m.Interrupted:
		p.finish(statusCancelled, m.Tokens)
	case m.ClosesTurn(): // not the text before a tool round: the turn goes on
		p.finish(statusCompleted, m.Tokens)
	}
}

// finish ends the response with status.
func (p *projector) finish(status string, tokens *agentik.TurnTokens) {
	if p.done {
		return
	}
	p.closeText()
	p.done = true
	p.resp.Status = status
	if tokens != nil {
		p.resp.Usage = respUsageOf(tokens)
	}
	typ := "response.completed"
	switch status {
	case statusFailed:
		typ = "response.failed"
	case statusCancelled, statusIncomplete:
		typ = "response.incomplete"
		p.resp.IncompleteDetails = &incompleteDetails{Reason: "interrupted"}
	}
	p.emit(typ, map[string]any{"response": p.resp})
}

// after returns the events a client that has everything up to n lacks: a
// delta it has part of is cut to the part it lacks.
func after(events []streamEvent, n int64) []streamEvent {
	if len(events) == 0 || events[0].prev >= n {
		return events // the client lacks them all
	}
	var out []streamEvent
	for _, ev := range events {
		switch {
		case ev.seq <= n:
			continue
		case ev.prev < n && (ev.typ == textDelta || ev.typ == reasoningDelta):
			d := ev.delta
			skip := int(n - ev.prev)
			for i := range d {
				if skip == 0 {
					d = d[i:]
					break
				}
				skip--
			}
			ev.delta = d
			ev.data = appendDelta(nil, ev.typ == reasoningDelta, ev.itemID, ev.index, d, ev.seq)
		}
		out = append(out, ev)
	}
	return out
}

// respUsageOf is a response's usage.
func respUsageOf(t *agentik.TurnTokens) *respUsage {
	return &respUsage{InputTokens: t.Input, OutputTokens: t.Output, TotalTokens: t.Input + t.Output,
		InputTokensDetails: map[string]int64{"cached_tokens": 0}, OutputTokensDetails: map[string]int64{"reasoning_tokens": 0}}
}
