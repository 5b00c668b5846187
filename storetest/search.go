package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// RunSearch checks a store's full-text index of the journal
// (agentik.MessageSearcher, SPEC §19) through its agents' views: a
// principal finds their own words across their conversations with one
// agent, newest first, and nothing of another principal, of another agent
// or of a deleted conversation, whatever the query holds. open must return
// a fresh database whose views implement agentik.MessageSearcher.
func RunSearch(t *testing.T, open func(t *testing.T) Agents) {
	t.Run("FindsAcrossConversations", func(t *testing.T) { testSearchFinds(t, open(t)) })
	t.Run("Isolation", func(t *testing.T) { testSearchIsolation(t, open(t)) })
	t.Run("Deleted", func(t *testing.T) { testSearchDeleted(t, open(t)) })
	t.Run("Hostile", func(t *testing.T) { testSearchHostile(t, open(t)) })
}

func searcher(t *testing.T, s agentik.Store) agentik.MessageSearcher {
	t.Helper()
	ms, ok := s.(agentik.MessageSearcher)
	if !ok {
		t.Fatalf("%T does not implement agentik.MessageSearcher", s)
	}
	return ms
}

// search runs query as owner and returns the hits.
func search(t *testing.T, s agentik.Store, owner, query string, limit int) []agentik.SearchHit {
	t.Helper()
	q, err := agentik.ParseSearchQuery(query)
	if err != nil {
		t.Fatalf("ParseSearchQuery(%q): %v", query, err)
	}
	hits, err := searcher(t, s).SearchMessages(t.Context(), owner, q, limit)
	if err != nil {
		t.Fatalf("SearchMessages(%q): %v", query, err)
	}
	return hits
}

// say stores a user message with text and an assistant answer with answer
// (when not empty) in conv, and returns their seqs.
func say(t *testing.T, s agentik.Store, conv, text, answer string) (int64, int64) {
	t.Helper()
	u := userMsg(conv, text)
	evs := []agentik.Event{agentik.MessageEvent(u)}
	if answer != "" {
		a := reply(conv, agentik.MsgAssistant, u.ID)
		a.Content = []agentik.Content{agentik.Text(answer)}
		evs = append(evs, agentik.MessageEvent(a))
	}
	out, _ := commit(t, s, agentik.Write{ConversationID: conv, Events: evs})
	if answer == "" {
		return out[0].Message.Seq, 0
	}
	return out[0].Message.Seq, out[1].Message.Seq
}

func hitKeys(hits []agentik.SearchHit) []string {
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = fmt.Sprintf("%s/%d/%s", h.ConversationID, h.Seq, h.Role)
	}
	return keys
}

func testSearchFinds(t *testing.T, s Agents) {
	a := s.For("support")
	owner := newOwner()
	c1 := record(owner, "one", at(1), at(1))
	c2 := record(owner, "two", at(2), at(2))
	create(t, a, c1)
	create(t, a, c2)
	u1, a1 := say(t, a, c1.ID, "My cat is called Pelargonium and she likes tuna.", "Pelargonium is a lovely name for a cat.")
	// A tool call and its result are not indexed.
	call := reply(c1.ID, agentik.MsgToolCall, "")
	call.Arguments = agentik.RawJSON(`{"q":"pelargonium"}`)
	res := &agentik.Message{ID: agentik.NewID(), ConversationID: c1.ID, Date: agentik.Now(), Type: agentik.MsgToolResult,
		CallID: call.CallID, Name: call.Name, Content: []agentik.Content{agentik.Text("Pelargonium tool output")}}
	commit(t, a, agentik.Write{ConversationID: c1.ID, Events: events(call, res)})
	u2, _ := say(t, a, c2.ID, "Remind me: what is my cat's name? pelargonium?", "")
	say(t, a, c2.ID, "Something else entirely.", "Nothing to see here.")

	hits := search(t, a, owner, "pelargonium", 10)
	want := []string{
		fmt.Sprintf("%s/%d/user", c2.ID, u2),
		fmt.Sprintf("%s/%d/assistant", c1.ID, a1),
		fmt.Sprintf("%s/%d/user", c1.ID, u1),
	}
	equal(t, "hits, newest first", hitKeys(hits), want)
	for _, h := range hits {
		if !strings.Contains(strings.ToLower(h.Snippet), "pelargonium") || h.Date.IsZero() {
			t.Fatalf("hit %+v: snippet without the word, or no date", h)
		}
	}
	// Every word must be there, in any order, whatever the case.
	equal(t, "two words", hitKeys(search(t, a, owner, "TUNA cat", 10)), want[2:])
	equal(t, "limit", hitKeys(search(t, a, owner, "pelargonium", 2)), want[:2])
	equal(t, "a word nobody said", hitKeys(search(t, a, owner, "pelargonium giraffe", 10)), []string{})
	// A long message: the snippet is cut around the word.
	long := strings.Repeat("filler words here ", 100) + "the zanzibar clue " + strings.Repeat("more filler ", 100)
	say(t, a, c2.ID, long, "")
	hits = search(t, a, owner, "zanzibar", 10)
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "zanzibar") || len([]rune(hits[0].Snippet)) > agentik.SnippetRunes+2 {
		t.Fatalf("long message hit: %+v", hits)
	}
}

func testSearchIsolation(t *testing.T, s Agents) {
	a, b := s.For("support"), s.For("coder")
	alice, mallory := newOwner(), newOwner()
	ca := record(alice, "secret", at(1), at(1))
	create(t, a, ca)
	say(t, a, ca.ID, "my bank password is hunter2 quokka", "noted quokka")
	cm := record(mallory, "probe", at(2), at(2))
	create(t, a, cm)
	say(t, a, cm.ID, "hello there", "")
	// The same principal with another agent.
	cb := record(alice, "other agent", at(3), at(3))
	create(t, b, cb)
	say(t, b, cb.ID, "quokka facts", "")

	if got := search(t, a, alice, "quokka", 10); len(got) != 2 {
		t.Fatalf("alice finds %d hits with support, want 2: %+v", len(got), got)
	}
	if got := search(t, b, alice, "quokka", 10); len(got) != 1 || got[0].ConversationID != cb.ID {
		t.Fatalf("alice with coder: %+v", got)
	}
	scope := storeutil.SearchScope(alice)
	for _, q := range []string{"quokka", "hunter2", "quokka " + scope, scope, "scope:" + scope, `scope : "` + scope + `"`,
		`"` + scope + `" OR quokka`, "quokka*", "NEAR(quokka hunter2)", "body:quokka"} {
		if got := search(t, a, mallory, q, 10); len(got) != 0 {
			t.Fatalf("mallory searching %q finds alice's messages: %+v", q, got)
		}
	}
	// The view of no agent, and of agent "", find nothing of theirs either.
	if got := search(t, s.Base, alice, "quokka", 10); len(got) != 0 {
		t.Fatalf("the base view finds %+v", got)
	}
	// Mallory saying alice's scope token does not put her messages in
	// alice's results.
	say(t, a, cm.ID, scope+" quokka", "")
	if got := search(t, a, alice, "quokka", 10); len(got) != 2 || slices.ContainsFunc(got, func(h agentik.SearchHit) bool { return h.ConversationID == cm.ID }) {
		t.Fatalf("alice's results after mallory's injection: %+v", got)
	}
}

func testSearchDeleted(t *testing.T, s Agents) {
	a := s.For("support")
	owner := newOwner()
	keep := record(owner, "keep", at(1), at(1))
	gone := record(owner, "gone", at(2), at(2))
	create(t, a, keep)
	create(t, a, gone)
	say(t, a, keep.ID, "the platypus stays", "")
	say(t, a, gone.ID, "the platypus leaves", "platypus gone")
	if got := search(t, a, owner, "platypus", 10); len(got) != 3 {
		t.Fatalf("before delete: %+v", got)
	}
	if _, err := a.DeleteConversation(t.Context(), gone.ID, at(3)); err != nil {
		t.Fatal(err)
	}
	got := search(t, a, owner, "platypus", 10)
	if len(got) != 1 || got[0].ConversationID != keep.ID {
		t.Fatalf("after delete: %+v", got)
	}
	if got := search(t, a, owner, "leaves", 10); len(got) != 0 {
		t.Fatalf("a word only the deleted conversation had: %+v", got)
	}
}

// testSearchHostile: query syntax of the index is text to find, never
// syntax; each query either finds the messages that hold its words or
// nothing, and never fails.
func testSearchHostile(t *testing.T, s Agents) {
	a := s.For("support")
	owner := newOwner()
	c := record(owner, "c", at(1), at(1))
	create(t, a, c)
	say(t, a, c.ID, `plain words: alpha beta "gamma" delta-epsilon NEAR zeta OR eta`, "")
	say(t, a, c.ID, "unrelated text", "")
	// Words joined by punctuation are words of their own, as a query's
	// are (PostgreSQL's parser keeps a host name or a number whole).
	say(t, a, c.ID, "see Example.COM/docs, or mail ops@host.io about 3.14 and v2-rc1, Überraschung", "")
	for q, n := range map[string]int{
		"example com":                    1,
		"docs":                           1,
		"ops host io":                    1,
		"3 14":                           1,
		"v2 rc1":                         1,
		"überraschung":                   1,
		"example.com":                    1,
		"3.14":                           1,
		"alpha":                          1,
		`"alpha`:                         1,
		`alpha"`:                         1,
		`"gamma"`:                        1,
		`alpha* `:                        1,
		"al*":                            0,
		"delta-epsilon":                  1,
		"NEAR(alpha beta)":               1,
		"NEAR(alpha unrelated)":          0,
		"alpha OR unrelated":             0,
		"alpha NOT beta":                 0,
		"body:alpha":                     0,
		"scope:alpha":                    0,
		"{body scope}:alpha":             0,
		"^alpha":                         1,
		"alpha AND":                      0,
		"(alpha":                         1,
		"alpha & beta | !gamma":          1,
		"alpha:* beta:A":                 0,
		"'alpha'":                        1,
		"text -alpha":                    0,
		`\"alpha\"`:                      1,
		strings.Repeat("alpha ", 32):     1,
		strings.Repeat("x", 999):         0,
		"ALPHA Beta":                     1,
		"unrelated; DROP TABLE messages": 0,
		"unrelated -- ":                  1,
	} {
		if got := search(t, a, owner, q, 10); len(got) != n {
			t.Errorf("query %q: %d hits, want %d: %+v", q, len(got), n, got)
		}
	}
	for _, q := range []string{"", "   ", "***", `""`, strings.Repeat("a", agentik.MaxSearchQueryBytes+1), "a\x00b", "a\x1bb",
		strings.Repeat("a ", agentik.MaxSearchTerms+1), "\xff"} {
		if _, err := agentik.ParseSearchQuery(q); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("ParseSearchQuery(%q) = %v, want invalid", q, err)
		}
	}
}
