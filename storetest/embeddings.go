package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// RunEmbeddings checks a store's vector index of the journal
// (agentik.MessageEmbeddings, SPEC §19, semantic recall) through its
// agents' views: the messages with no vector of a model are listed, once
// stored they are not, a changed model lists them again; the nearest
// messages are the owner's with the agent only, nearest first, above the
// least similarity; a deleted conversation's vectors go with it. open
// must return a fresh database whose views implement
// agentik.MessageSearcher and agentik.MessageEmbeddings, and a count of
// the vector rows the database holds.
func RunEmbeddings(t *testing.T, open func(t *testing.T) (Agents, func() int)) {
	t.Run("Unembedded", func(t *testing.T) { s, _ := open(t); testUnembedded(t, s) })
	t.Run("Nearest", func(t *testing.T) { s, _ := open(t); testNearest(t, s) })
	t.Run("Deleted", func(t *testing.T) { s, count := open(t); testVectorsDeleted(t, s, count) })
}

func embeddings(t *testing.T, s agentik.Store) agentik.MessageEmbeddings {
	t.Helper()
	me, ok := s.(agentik.MessageEmbeddings)
	if !ok {
		t.Fatalf("%T does not implement agentik.MessageEmbeddings", s)
	}
	return me
}

// unembedded returns the texts s lists for model, sorted.
func unembedded(t *testing.T, s agentik.Store, model string) []agentik.MessageText {
	t.Helper()
	ms, err := embeddings(t, s).UnembeddedMessages(t.Context(), model, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func msgTexts(ms []agentik.MessageText) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Text)
	}
	slices.Sort(out)
	return out
}

// putAll stores, for each listed message, the vector vec gives its text.
func putAll(t *testing.T, s agentik.Store, model string, ms []agentik.MessageText, vec func(string) []float32) {
	t.Helper()
	vs := make([]agentik.MessageVector, len(ms))
	for i, m := range ms {
		vs[i] = agentik.MessageVector{ID: m.ID, Vector: vec(m.Text)}
	}
	if err := embeddings(t, s).PutEmbeddings(t.Context(), model, vs); err != nil {
		t.Fatal(err)
	}
}

// axis embeds a text on one axis of three by its first letter: a, b or
// anything else.
func axis(text string) []float32 {
	switch text[0] {
	case 'a':
		return []float32{1, 0, 0}
	case 'b':
		return []float32{0.8, 0.6, 0}
	}
	return []float32{0, 0, 1}
}

func testUnembedded(t *testing.T, s Agents) {
	a, b := s.For("support"), s.For("coder")
	owner := newOwner()
	ca, cb := record(owner, "a", at(1), at(1)), record(owner, "b", at(2), at(2))
	create(t, a, ca)
	create(t, b, cb)
	say(t, a, ca.ID, "apples", "bananas")
	say(t, b, cb.ID, "cherries", "")
	equal(t, "the support agent's messages", msgTexts(unembedded(t, a, "m1")), []string{"apples", "bananas"})
	since := func(from time.Time, limit int) []string {
		t.Helper()
		ms, err := embeddings(t, a).UnembeddedMessages(t.Context(), "m1", from, limit)
		if err != nil {
			t.Fatal(err)
		}
		return msgTexts(ms)
	}
	equal(t, "dated an hour ago or later", since(time.Now().Add(-time.Hour), 100), []string{"apples", "bananas"})
	equal(t, "dated an hour from now or later", since(time.Now().Add(time.Hour), 100), []string{})
	if got := since(time.Time{}, 1); len(got) != 1 {
		t.Fatalf("a limit of 1 gave %q", got)
	}
	putAll(t, a, "m1", unembedded(t, a, "m1"), axis)
	equal(t, "after they are stored", msgTexts(unembedded(t, a, "m1")), []string{})
	equal(t, "another model", msgTexts(unembedded(t, a, "m2")), []string{"apples", "bananas"})
	equal(t, "the coder agent's", msgTexts(unembedded(t, b, "m1")), []string{"cherries"})
	// Storing again is harmless; a message of another agent is not written.
	putAll(t, a, "m1", unembedded(t, b, "m1"), axis)
	equal(t, "a vector put through another agent's view", msgTexts(unembedded(t, b, "m1")), []string{"cherries"})
}

func testNearest(t *testing.T, s Agents) {
	a, b := s.For("support"), s.For("coder")
	alice, mallory := newOwner(), newOwner()
	c1, c2 := record(alice, "one", at(1), at(1)), record(mallory, "two", at(2), at(2))
	c3 := record(alice, "three", at(3), at(3))
	create(t, a, c1)
	create(t, a, c2)
	create(t, b, c3)
	u1, a1 := say(t, a, c1.ID, "apples", "bananas")
	say(t, a, c1.ID, "zucchini", "")
	m1, _ := say(t, a, c2.ID, "apples for mallory", "")
	b1, _ := say(t, b, c3.ID, "apples for the coder", "")
	putAll(t, a, "m1", unembedded(t, a, "m1"), axis)
	putAll(t, b, "m1", unembedded(t, b, "m1"), axis)
	near := func(s agentik.Store, owner, model string, minSim float32, limit int) []string {
		t.Helper()
		hits, err := embeddings(t, s).NearestMessages(t.Context(), owner, agentik.VectorQuery{
			Model: model, Vector: []float32{1, 0, 0}, MinSimilarity: minSim, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return hitKeys(hits)
	}
	u, as := fmt.Sprintf("%s/%d/user", c1.ID, u1), fmt.Sprintf("%s/%d/assistant", c1.ID, a1)
	equal(t, "nearest first, above 0.5", near(a, alice, "m1", 0.5, 10), []string{u, as})
	equal(t, "above 0.9", near(a, alice, "m1", 0.9, 10), []string{u})
	equal(t, "limit", near(a, alice, "m1", 0, 1), []string{u})
	equal(t, "another model", near(a, alice, "m2", 0, 10), []string{})
	equal(t, "mallory's", near(a, mallory, "m1", 0.9, 10), []string{fmt.Sprintf("%s/%d/user", c2.ID, m1)})
	equal(t, "the coder's", near(b, alice, "m1", 0.9, 10), []string{fmt.Sprintf("%s/%d/user", c3.ID, b1)})
	equal(t, "nobody's", near(a, newOwner(), "m1", 0, 10), []string{})
}

func testVectorsDeleted(t *testing.T, s Agents, count func() int) {
	a := s.For("support")
	owner := newOwner()
	keep, gone := record(owner, "keep", at(1), at(1)), record(owner, "gone", at(2), at(2))
	create(t, a, keep)
	create(t, a, gone)
	say(t, a, keep.ID, "apples", "")
	say(t, a, gone.ID, "avocados", "bananas")
	ms := unembedded(t, a, "m1")
	putAll(t, a, "m1", ms, axis)
	if n := count(); n != 3 {
		t.Fatalf("%d vectors stored, want 3", n)
	}
	if _, err := a.DeleteConversation(t.Context(), gone.ID, at(3)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d vectors after the delete, want 1", n)
	}
	// A vector of a message deleted meanwhile is not written.
	putAll(t, a, "m1", ms, axis)
	if n := count(); n != 1 {
		t.Fatalf("%d vectors after putting those of deleted messages, want 1", n)
	}
}
