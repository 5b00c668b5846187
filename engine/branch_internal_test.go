package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// journal builds messages 1… of one path, each following the one before:
// "u:x" a user message, "a:x" the answer to the last user message.
func journal(specs ...string) []agentik.Message {
	var out []agentik.Message
	var user string
	for i, s := range specs {
		kind, text, _ := strings.Cut(s, ":")
		m := agentik.Message{ID: "m" + text, Seq: int64(i + 1), Parent: int64(i), Content: []agentik.Content{agentik.Text(text)}}
		if kind == "u" {
			m.Type, user = agentik.MsgUser, m.ID
		} else {
			m.Type, m.ReplyTo = agentik.MsgAssistant, user
		}
		out = append(out, m)
	}
	return out
}

// describe writes memory as role:text, summaries as [text].
func describe(mem []agentik.MemoryEntry) string {
	var parts []string
	for _, e := range mem {
		text := agentik.JoinText(e.Message.Content)
		if e.Message.Role == agentik.RoleSummary {
			parts = append(parts, "["+text+"]")
			continue
		}
		parts = append(parts, e.Message.Role+":"+text)
	}
	return strings.Join(parts, " ")
}

// summary is the working memory compaction leaves: a summary, then the
// entries of the messages kept.
func summary(text string, msgs ...agentik.Message) []agentik.MemoryEntry {
	mem := []agentik.MemoryEntry{{ReplyTo: msgs[0].ID, // made in the turn of the first message kept, as compaction does
		Message: agentik.ModelMessage{Role: agentik.RoleSummary, Content: []agentik.Content{agentik.Text(text)}}}}
	return append(mem, journalMemory(msgs, "")...)
}

// TestRebuildMemoryPerPath: a summary belongs to the path it summarises.
// A branch that starts after the summarised part keeps the summary and the
// entries it shares, and gets its own after them; one that starts inside
// the summarised part rebuilds its memory from its journal path, without
// the other path's summary.
func TestRebuildMemoryPerPath(t *testing.T) {
	old := journal("u:1", "a:2", "u:3", "a:4", "u:5", "a:6")
	// Compaction summarised 1-4 on the old path.
	compacted := summary("1-4", old[4:]...)
	if got := describe(compacted); got != "[1-4] user:5 assistant:6" {
		t.Fatalf("compacted memory %q", got)
	}

	// An edit of 6's successor (a branch after 6): the summary stays.
	after := append(slices.Clone(old), agentik.Message{ID: "m7b", Seq: 9, Parent: 6, Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("7b")}})
	if got := describe(rebuildMemory(compacted, after, "m7b")); got != "[1-4] user:5 assistant:6 user:7b" {
		t.Fatalf("after a branch past the summary: %q", got)
	}
	// An edit of 5, the first message after the summarised part: nothing
	// kept tells where the summary ends, so the path is rebuilt whole (and
	// compacted again by the budget rules if too long).
	edit := append(journal("u:1", "a:2", "u:3", "a:4"), agentik.Message{ID: "m5b", Seq: 7, Parent: 4, Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("5b")}})
	if got := describe(rebuildMemory(compacted, edit, "m5b")); got != "user:1 assistant:2 user:3 assistant:4 user:5b" {
		t.Fatalf("after a branch at the summary's end: %q", got)
	}
	// A regenerate of 5 (the path up to 5): the summary and 5 stay.
	if got := describe(rebuildMemory(compacted, old[:5], "m5")); got != "[1-4] user:5" {
		t.Fatalf("after a regenerate of 5: %q", got)
	}
	// An edit of 3 (a branch inside the summarised part): rebuilt from the
	// path, without the summary of 3 and 4.
	early := append(journal("u:1", "a:2"), agentik.Message{ID: "m3b", Seq: 8, Parent: 2, Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("3b")}})
	if got := describe(rebuildMemory(compacted, early, "m3b")); got != "user:1 assistant:2 user:3b" {
		t.Fatalf("after a branch inside the summary: %q", got)
	}
	// Without compaction, a switch to a shorter path keeps its prefix.
	full := journalMemory(old, "")
	if got := describe(rebuildMemory(full, old[:4], "")); got != "user:1 assistant:2 user:3 assistant:4" {
		t.Fatalf("after a switch to 4: %q", got)
	}
}

// TestJournalMemoryRounds: a turn's tool rounds come back from the journal
// as the engine wrote them (text with calls, then results), a round cut
// short is left out, and a user message answered on another branch is too.
func TestJournalMemoryRounds(t *testing.T) {
	msgs := []agentik.Message{
		{ID: "u1", Seq: 1, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("q")}},
		{ID: "a2", Seq: 2, Type: agentik.MsgAssistant, ReplyTo: "u1", Content: []agentik.Content{agentik.Text("looking")}},
		{ID: "c3", Seq: 3, Type: agentik.MsgToolCall, ReplyTo: "u1", CallID: "k1", Name: "t", Arguments: agentik.RawJSON(`{}`)},
		{ID: "r4", Seq: 4, Type: agentik.MsgToolResult, ReplyTo: "u1", CallID: "k1", Name: "t", Content: []agentik.Content{agentik.Text("r")}},
		{ID: "c5", Seq: 5, Type: agentik.MsgToolCall, ReplyTo: "u1", CallID: "k2", Name: "t", Arguments: agentik.RawJSON(`{}`)},
		{ID: "u6", Seq: 6, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("queued")}},
	}
	mem := journalMemory(msgs, "")
	if got := describe(mem); got != "user:q assistant:looking tool:r" {
		t.Fatalf("memory %q", got)
	}
	if calls := mem[1].Message.ToolCalls; len(calls) != 1 || calls[0].ID != "k1" {
		t.Fatalf("the round's calls %+v", calls)
	}
	if got := describe(journalMemory(msgs, "u6")); got != "user:q assistant:looking tool:r user:queued" {
		t.Fatalf("with the queued turn starting: %q", got)
	}
}
