package engine

// Compaction keeps a conversation's working memory inside the model's
// context budget (SPEC §3, docs/context.md).
//
// Before each model call the request is estimated (package tokens). When it
// would pass the budget less a reserve for the answer, the oldest part of
// working memory is summarised by the model in a separate, unstreamed call
// and replaced by one summary entry, in one commit together with a durable
// compaction_triggered event. The journal is never touched. The cut:
//
//   - never separates an assistant's tool calls from their results: it only
//     falls before a user or assistant entry, and a tool round enters working
//     memory whole;
//   - never removes the latest user message (the one the turn answers) nor
//     anything after it; the system prompt is not in working memory at all;
//   - folds earlier summaries that fall inside it into the new summary.
//
// The store appends the summary entry at the end of working memory
// (DropMemoryThrough only removes a prefix), so the request is built with
// summary entries first, in their order, then everything else in order.
//
// If the summariser fails, the oldest complete exchanges are dropped instead
// and the event says Fallback. If the model reports a context overflow
// anyway, the turn compacts harder (to half of what was sent) and retries
// once.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/tokens"
)

// DefaultContextTokens is the budget when neither Options nor the model say.
const DefaultContextTokens = 32768

// DefaultSummaryPrompt is the summariser's system prompt.
const DefaultSummaryPrompt = `You condense the earlier part of a conversation between a user and an AI assistant, so that the assistant can continue the conversation without the original messages.

Write a concise summary, in the language of the conversation, that keeps:
- what the user wants, asked for and decided;
- facts, names, numbers, dates, file paths, code identifiers and URLs that may matter later;
- which tools were called and what they returned, when it matters;
- what the assistant answered or promised, and anything still open.

If the input starts with an earlier summary, merge it into yours. Do not invent anything, do not address the user, and write only the summary.`

// fallbackNote stands in for the summary when the summariser failed.
const fallbackNote = "Earlier messages of this conversation were removed to fit the model's context window; no summary of them is available."

const (
	// maxSummaryCalls bounds the summariser calls of one compaction; when the
	// part to summarise is longer, its oldest chunks are left out.
	maxSummaryCalls = 8
	// maxResponseReserve caps the room kept free for the model's answer.
	maxResponseReserve = 8192
)

// compactLimits returns when compaction starts (the estimated request passes
// trigger) and how far it goes (down to target). The gap between the two
// keeps compaction from running on every turn.
func (e *Engine) compactLimits() (trigger, target int) {
	b := e.opts.ContextTokens
	return b - min(b/4, maxResponseReserve), b / 2
}

// modelMessages turns working memory into request messages: summaries
// first, in order, then every other entry in order. Stored reasoning is left
// out unless SendReasoning.
func (c *conv) modelMessages() []agentik.ModelMessage {
	return c.appendModelMessages(make([]agentik.ModelMessage, 0, len(c.memory)))
}

// appendModelMessages appends modelMessages' messages to out.
func (c *conv) appendModelMessages(out []agentik.ModelMessage) []agentik.ModelMessage {
	for _, m := range c.memory {
		if m.Message.Role == agentik.RoleSummary {
			out = append(out, m.Message)
		}
	}
	for _, m := range c.memory {
		if m.Message.Role == agentik.RoleSummary {
			continue
		}
		msg := m.Message
		if !c.e.opts.SendReasoning {
			msg.Reasoning = ""
		}
		out = append(out, msg)
	}
	return out
}

// request builds the model request of the current working memory.
func (r *turnRun) request(offered []agentik.ToolSpec) agentik.ModelRequest {
	system := r.system
	if system == "" {
		system = r.c.e.SystemPrompt()
	}
	return agentik.ModelRequest{System: system, Tools: offered, Messages: r.c.modelMessages(), Params: r.params}
}

// cut is a planned compaction.
type cut struct {
	through int64                 // DropMemoryThrough
	folded  []agentik.MemoryEntry // earlier summaries inside the cut
	dropped []agentik.MemoryEntry // other entries inside the cut, in order
	removed int                   // estimated tokens the cut removes
}

// planCut chooses the shortest prefix of working memory whose removal brings
// the request estimate (total) down to target, allowing addBack tokens for
// what replaces it. Only cuts before a user entry are allowed when
// exchangesOnly, else also before an assistant entry. When no allowed cut
// reaches target the longest one is taken; ok is false when none exists.
func (c *conv) planCut(total, target, addBack int, exchangesOnly bool) (cut, bool) {
	send := c.e.opts.SendReasoning
	var rest []agentik.MemoryEntry
	var summaries []agentik.MemoryEntry
	for _, m := range c.memory {
		if m.Message.Role == agentik.RoleSummary {
			summaries = append(summaries, m)
		} else {
			rest = append(rest, m)
		}
	}
	lastUser := -1
	for i := len(rest) - 1; i >= 0; i-- {
		if rest[i].Message.Role == agentik.RoleUser {
			lastUser = i
			break
		}
	}
	best, found := 0, false
	removed, bestRemoved := 0, 0
	for k := 1; k <= lastUser; k++ {
		removed += tokens.Message(rest[k-1].Message, send)
		role := rest[k].Message.Role
		if role == agentik.RoleTool || (exchangesOnly && role != agentik.RoleUser) {
			continue
		}
		withSummaries := removed
		for _, s := range summaries {
			if s.Order <= rest[k-1].Order {
				withSummaries += tokens.Message(s.Message, send)
			}
		}
		best, bestRemoved, found = k, withSummaries, true
		if total-withSummaries+addBack <= target {
			break
		}
	}
	if !found {
		return cut{}, false
	}
	p := cut{through: rest[best-1].Order, dropped: rest[:best:best], removed: bestRemoved}
	for _, s := range summaries {
		if s.Order <= p.through {
			p.folded = append(p.folded, s)
		}
	}
	return p, true
}

// fit compacts working memory when the request for offered tools would pass
// the budget. overflow says the model already refused the request: then it
// compacts to half of the estimate, whatever the budget says. It reports
// whether working memory changed. Errors are the turn's context ending or
// a failed store write; a failed summariser is not an error (fallback).
func (r *turnRun) fit(offered []agentik.ToolSpec, overflow bool) (bool, error) {
	c := r.c
	if err := c.ensureMemory(r.ctx); err != nil {
		return false, err
	}
	total := tokens.Request(r.request(offered), c.e.opts.SendReasoning)
	trigger, target := c.e.compactLimits()
	if overflow {
		target = min(target, total/2)
	} else if total <= trigger {
		return false, nil
	}
	// The cut is addressed by store order; a store that did not report the
	// orders of entries it appended leaves zeros in the cache: re-read. (The
	// entries the turn holds unsaved have none yet, and are kept.)
	stored := len(c.memory) - c.unsaved
	for _, m := range c.memory[:stored] {
		if m.Order <= 0 {
			unsaved := slices.Clone(c.memory[stored:])
			c.memoryLoaded = false
			if err := c.ensureMemory(r.ctx); err != nil {
				return false, err // the cache is as it was
			}
			c.memory = append(c.memory, unsaved...)
			break
		}
	}
	// Room for the summary that replaces the cut: an eighth of the target.
	p, ok := c.planCut(total, target, target/8, false)
	if !ok {
		return false, nil
	}
	summary, used, err := r.summarise(p, target)
	r.tokens = r.tokens.Add(used)
	fallback := false
	if err != nil {
		if r.ctx.Err() != nil {
			return false, r.ctx.Err()
		}
		c.e.log.Warn("compaction summary failed; dropping the oldest exchanges instead", "conversation", c.id, "err", err)
		fallback = true
		if p, ok = c.planCut(total, target, tokens.Text(fallbackNote)+tokens.MessageOverhead, true); !ok {
			return false, nil
		}
		summary = fallbackNote
		if len(p.folded) > 0 {
			// Keep what earlier summaries knew: only the new part is lost.
			var b strings.Builder
			for _, s := range p.folded {
				b.WriteString(agentik.JoinText(s.Message.Content))
				b.WriteString("\n\n")
			}
			b.WriteString(fallbackNote)
			summary = b.String()
		}
	}
	return true, r.commitCompaction(p, summary, total, fallback)
}

// commitCompaction replaces the cut with one summary entry and records the
// compaction_triggered event, in one commit.
func (r *turnRun) commitCompaction(p cut, summary string, before int, fallback bool) error {
	c := r.c
	entry := agentik.MemoryEntry{ReplyTo: r.t.user.ID, Message: agentik.ModelMessage{
		Role: agentik.RoleSummary, Content: []agentik.Content{agentik.Text(summary)}}}
	comp := &agentik.Compaction{
		Summary:      summary,
		Model:        c.e.opts.LLM.Info().Name,
		TokensBefore: before,
		TokensAfter:  before - p.removed + tokens.Message(entry.Message, c.e.opts.SendReasoning),
		Fallback:     fallback,
	}
	comp.FromSeq, comp.ToSeq = r.seqRange(p)
	ev := agentik.Event{ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvCompactionTriggered, ReplyTo: r.t.user.ID,
		Dropped: len(p.folded) + len(p.dropped), SummaryTokens: tokens.Text(summary), Compaction: comp}
	w := agentik.Write{Events: []agentik.Event{ev}, DropMemoryThrough: p.through, Memory: []agentik.MemoryEntry{entry}}
	if err := c.appendMemory(r.ctx, w); err != nil {
		return r.storeErr(err)
	}
	c.e.log.Info("working memory compacted", "conversation", c.id, "dropped", ev.Dropped,
		"tokens_before", comp.TokensBefore, "tokens_after", comp.TokensAfter, "fallback", fallback)
	return nil
}

// seqRange finds the journal seqs the cut covers: from the first to the last
// journal message behind its entries (tool rounds have none of their own,
// and lie between those). A folded summary covers the conversation from its
// start. Best effort: a failed lookup leaves a bound unset.
func (r *turnRun) seqRange(p cut) (from, to int64) {
	var first, last string
	for _, m := range p.dropped {
		if m.SourceID != "" {
			if first == "" {
				first = m.SourceID
			}
			last = m.SourceID
		}
	}
	lookup := func(id string) int64 {
		if id == "" {
			return 0
		}
		m, err := r.c.store.Message(r.ctx, r.c.id, id)
		if err != nil {
			return 0
		}
		return m.Seq
	}
	from, to = lookup(first), lookup(last)
	if len(p.folded) > 0 {
		from = 1
	}
	if to < from {
		to = from
	}
	return from, to
}

// errEmptySummary is a summariser answer without text.
var errEmptySummary = errors.New("the summariser returned no text")

// summarise asks the model for one summary of the cut, in chunks that fit
// half of the target each, carrying the summary so far from chunk to chunk.
// It returns the tokens the calls used, also on error.
func (r *turnRun) summarise(p cut, target int) (string, agentik.TurnTokens, error) {
	c := r.c
	var used agentik.TurnTokens
	prompt := tokens.Text(c.e.opts.SummaryPrompt) + 2*tokens.MessageOverhead
	chunkBytes := max((target/2-prompt)*tokens.BytesPerToken, 4096)

	var parts []string
	for _, s := range p.folded {
		parts = append(parts, "[Earlier summary]\n"+agentik.JoinText(s.Message.Content))
	}
	for _, m := range p.dropped {
		parts = append(parts, render(m.Message))
	}
	chunks := chunk(parts, chunkBytes)
	omitted := 0
	if len(chunks) > maxSummaryCalls {
		omitted = len(chunks) - maxSummaryCalls
		chunks = chunks[omitted:]
	}
	summary := ""
	for i, ch := range chunks {
		var b strings.Builder
		if summary != "" {
			b.WriteString("Summary so far:\n")
			b.WriteString(summary)
			b.WriteString("\n\nThe conversation continues:\n\n")
		} else if omitted > 0 {
			b.WriteString("(The very beginning of the conversation was too long to summarise and is left out.)\n\n")
		}
		b.WriteString(ch)
		req := agentik.ModelRequest{System: c.e.opts.SummaryPrompt, Messages: []agentik.ModelMessage{{
			Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text(b.String())}}}}
		// Not streamed: onDelta discards, clients only see the event.
		resp, err := c.e.opts.LLM.Generate(r.ctx, req, func(agentik.ModelDelta) {})
		used = used.Add(resp.Tokens)
		if err != nil {
			return "", used, fmt.Errorf("summary call %d of %d: %w", i+1, len(chunks), err)
		}
		text := strings.TrimSpace(resp.Text)
		if text == "" {
			return "", used, errEmptySummary
		}
		summary = text
	}
	// A runaway summariser must not refill the context it was asked to
	// free: the summary keeps at most a quarter of the target.
	if limit := max(target/4, 64) * tokens.BytesPerToken; len(summary) > limit {
		summary = strings.ToValidUTF8(summary[:limit], "") + " […]"
	}
	return summary, used, nil
}

// render writes one working-memory entry as transcript text for the
// summariser. Images are named, not sent: a summary is text.
func render(m agentik.ModelMessage) string {
	var b strings.Builder
	switch m.Role {
	case agentik.RoleUser:
		b.WriteString("User: ")
	case agentik.RoleAssistant:
		b.WriteString("Assistant: ")
	case agentik.RoleTool:
		if m.IsError {
			fmt.Fprintf(&b, "Tool %s failed: ", m.Name)
		} else {
			fmt.Fprintf(&b, "Tool %s returned: ", m.Name)
		}
	default:
		b.WriteString(m.Role + ": ")
	}
	for _, p := range m.Content {
		if p.Type == agentik.ContentImage {
			fmt.Fprintf(&b, "[%s image]", p.MIME)
		} else {
			b.WriteString(p.Text)
		}
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "\n(calls tool %s with %s)", tc.Name, tc.Arguments)
	}
	return b.String()
}

// chunk groups parts into chunks of at most max bytes each; a part longer
// than that keeps its head and tail.
func chunk(parts []string, max int) []string {
	var out []string
	var cur strings.Builder
	for _, p := range parts {
		if len(p) > max {
			p = strings.ToValidUTF8(p[:max/2]+"\n[…]\n"+p[len(p)-max/2+16:], "")
		}
		if cur.Len() > 0 && cur.Len()+len(p)+2 > max {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(p)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
