package local

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hybridgroup/yzma/pkg/llama"

	"github.com/agentik/agentik"
)

// promptChunk is how many prompt tokens are decoded between two looks at
// the call's context: an interrupt waits for at most one chunk.
const promptChunk = 64

var _ agentik.LLM = (*Model)(nil)

// callIDs numbers the tool calls of the process.
var callIDs atomic.Int64

// Info describes the model.
func (m *Model) Info() agentik.ModelInfo {
	return agentik.ModelInfo{Name: m.name, ContextTokens: m.nCtx}
}

// Generate answers req, streaming text as it is sampled. It returns as
// soon as ctx ends (within one token, or one chunk of the prompt).
func (m *Model) Generate(ctx context.Context, req agentik.ModelRequest, onDelta func(agentik.ModelDelta)) (agentik.ModelResponse, error) {
	text, err := applyTemplate(m.template, messages(req))
	if err != nil {
		return agentik.ModelResponse{}, err
	}
	prompt := llama.Tokenize(m.vocab, text, true, true)
	if len(prompt) == 0 {
		return agentik.ModelResponse{}, fmt.Errorf("local model: the prompt is empty")
	}
	if len(prompt) >= m.nCtx {
		return agentik.ModelResponse{}, fmt.Errorf("local model: the prompt is %d tokens, the context %d: %w", len(prompt), m.nCtx, agentik.ErrContextOverflow)
	}
	s, err := m.acquire(ctx, prompt)
	if err != nil {
		return agentik.ModelResponse{}, err
	}
	defer m.release(s)
	if err := m.feed(ctx, s, prompt); err != nil {
		return agentik.ModelResponse{}, err
	}
	g := &generation{m: m, s: s, tools: req.Tools, onDelta: onDelta}
	g.chain = m.sampler("")
	defer func() { llama.SamplerFree(g.chain) }()
	resp, err := g.run(ctx)
	resp.Tokens = agentik.TurnTokens{Input: int64(len(prompt)), Output: int64(g.n)}
	resp.Model = m.name
	return resp, err
}

// feed makes s's cache hold prompt: the part it shares is kept, the rest
// of the cache dropped and the rest of prompt decoded. At least the last
// token is decoded, for the logits of the answer's first token.
func (m *Model) feed(ctx context.Context, s *slot, prompt []llama.Token) error {
	keep := min(commonPrefix(s.cached, prompt), len(prompt)-1)
	if keep < len(s.cached) {
		mem, err := llama.GetMemory(s.ctx)
		if err != nil {
			return err
		}
		if ok, err := llama.MemorySeqRm(mem, 0, llama.Pos(keep), -1); err != nil || !ok {
			// A cache that cannot be cut (recurrent models): rebuild it.
			if err := llama.MemoryClear(mem, true); err != nil {
				return err
			}
			keep = 0
		}
		s.cached = s.cached[:keep]
	}
	m.lastKept.Store(int64(keep))
	for i := keep; i < len(prompt); i += promptChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.decode(s, prompt[i:min(i+promptChunk, len(prompt))]); err != nil {
			return err
		}
	}
	return nil
}

// decode runs toks through s's context after what it holds. On failure the
// cache is forgotten, so that the next call rebuilds it.
func (m *Model) decode(s *slot, toks []llama.Token) error {
	rc, err := llama.Decode(s.ctx, llama.BatchGetOne(toks))
	if err == nil && rc != 0 {
		err = fmt.Errorf("llama_decode returned %d", rc)
	}
	if err != nil {
		s.cached = nil
		if mem, e := llama.GetMemory(s.ctx); e == nil {
			_ = llama.MemoryClear(mem, true)
		}
		return fmt.Errorf("local model: %w", err)
	}
	s.cached = append(s.cached, toks...)
	return nil
}

// sampler is the chain of a call: the grammar (when given), then greedy or
// temperature sampling.
func (m *Model) sampler(grammar string) llama.Sampler {
	chain := llama.SamplerChainInit(llama.SamplerChainDefaultParams())
	if grammar != "" {
		llama.SamplerChainAdd(chain, llama.SamplerInitGrammar(m.vocab, grammar, "root"))
	}
	if m.opts.Temperature <= 0 {
		llama.SamplerChainAdd(chain, llama.SamplerInitGreedy())
		return chain
	}
	topP := m.opts.TopP
	if topP <= 0 || topP > 1 {
		topP = 0.95
	}
	llama.SamplerChainAdd(chain, llama.SamplerInitTopP(topP, 1))
	llama.SamplerChainAdd(chain, llama.SamplerInitTemp(m.opts.Temperature))
	seed := m.opts.Seed
	if seed == 0 {
		seed = llama.DefaultSeed
	}
	llama.SamplerChainAdd(chain, llama.SamplerInitDist(seed))
	return chain
}

// generation is one answer being sampled.
type generation struct {
	m       *Model
	s       *slot
	tools   []agentik.ToolSpec
	onDelta func(agentik.ModelDelta)
	chain   llama.Sampler

	n       int    // tokens sampled
	pending []byte // sampled bytes not yet a whole UTF-8 text
	answer  strings.Builder
	started bool // text has been streamed
	shown   int  // bytes of answer streamed (or skipped as leading blanks)
	call    bool // the answer is a tool call
	callAt  int  // where its JSON starts in answer
}

func (g *generation) run(ctx context.Context) (agentik.ModelResponse, error) {
	maxTokens := g.m.opts.MaxTokens
	if maxTokens <= 0 {
		maxTokens = g.m.nCtx
	}
	buf := make([]byte, 256)
	for {
		if err := ctx.Err(); err != nil {
			return agentik.ModelResponse{}, err
		}
		tok := llama.SamplerSample(g.chain, g.s.ctx, -1)
		if llama.VocabIsEOG(g.m.vocab, tok) {
			return g.finish("stop")
		}
		g.n++
		// Control and unknown tokens are not text; user-defined ones
		// (<tool_call> in many vocabularies) are.
		n := int32(0)
		if llama.VocabGetAttr(g.m.vocab, tok)&(llama.TokenAttrControl|llama.TokenAttrUnknown) == 0 {
			n = llama.TokenToPiece(g.m.vocab, tok, buf, 0, true)
		}
		if n > 0 {
			g.pending = append(g.pending, buf[:min(int(n), len(buf))]...)
		}
		if err := g.advance(); err != nil {
			return agentik.ModelResponse{}, err
		}
		if g.n >= maxTokens || len(g.s.cached)+1 >= g.m.nCtx {
			return g.finish("length") // no room to decode the token
		}
		if err := g.m.decode(g.s, []llama.Token{tok}); err != nil {
			return agentik.ModelResponse{}, err
		}
	}
}

// advance moves the whole characters sampled into the answer and streams
// what is certainly text: while the answer may still become a tool call
// (it is, so far, the beginning of toolCallTag) it is held back.
func (g *generation) advance() error {
	cut := len(g.pending)
	for cut > 0 && !utf8.Valid(g.pending[:cut]) {
		cut--
	}
	if cut == 0 && len(g.pending) < utf8.UTFMax {
		return nil
	}
	if cut == 0 { // not UTF-8 at all: pass it on as it is
		cut = len(g.pending)
	}
	g.answer.Write(g.pending[:cut])
	g.pending = append(g.pending[:0], g.pending[cut:]...)
	if g.call {
		return nil
	}
	all := g.answer.String()
	if !g.started {
		trimmed := strings.TrimLeft(all, " \t\n")
		if trimmed == "" {
			return nil // the answer's leading blanks are not shown
		}
		if len(g.tools) > 0 {
			if strings.HasPrefix(trimmed, toolCallTag) {
				return g.startCall(len(all) - len(trimmed) + len(toolCallTag))
			}
			if strings.HasPrefix(toolCallTag, trimmed) {
				return nil
			}
		}
		g.started, g.shown = true, len(all)-len(trimmed)
	}
	if d := all[g.shown:]; d != "" {
		g.shown += len(d)
		g.onDelta(agentik.ModelDelta{Kind: agentik.DeltaText, Text: d})
	}
	return nil
}

// startCall turns the answer into a tool call at byte at of the answer:
// from there on a grammar holds the model to one call of a tool offered.
func (g *generation) startCall(at int) error {
	g.call, g.callAt = true, at
	if strings.TrimSpace(g.answer.String()[at:]) != "" {
		return nil // the tag came with more in its token: left unconstrained
	}
	grammar := g.m.sampler(toolGrammar(g.tools))
	if grammar == 0 {
		return fmt.Errorf("local model: llama.cpp refused the tool grammar")
	}
	llama.SamplerFree(g.chain)
	g.chain = grammar
	return nil
}

func (g *generation) finish(reason string) (agentik.ModelResponse, error) {
	g.answer.Write(g.pending)
	all := g.answer.String()
	if !g.call {
		text := strings.TrimLeft(all, " \t\n")
		if d := all[min(g.shown, len(all)):]; g.started && d != "" {
			g.onDelta(agentik.ModelDelta{Kind: agentik.DeltaText, Text: d})
		} else if !g.started && text != "" {
			g.onDelta(agentik.ModelDelta{Kind: agentik.DeltaText, Text: text})
		}
		return agentik.ModelResponse{Text: text, FinishReason: reason}, nil
	}
	body := strings.TrimSpace(all[g.callAt:])
	body = strings.TrimSpace(strings.TrimSuffix(body, "</tool_call>"))
	var call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(body), &call); err != nil || call.Name == "" {
		return agentik.ModelResponse{}, fmt.Errorf("local model: the tool call is not the JSON asked for (finish %s): %q", reason, body)
	}
	if len(call.Arguments) == 0 || string(call.Arguments) == "null" {
		call.Arguments = json.RawMessage("{}")
	}
	id := fmt.Sprintf("call_local_%d", callIDs.Add(1))
	return agentik.ModelResponse{
		ToolCalls:    []agentik.ToolCall{{ID: id, Name: call.Name, Arguments: agentik.RawJSON(call.Arguments)}},
		FinishReason: "tool_calls",
	}, nil
}
