package storeutil

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/agentik/agentik"
)

// SearchScope is the token the full-text index files a message under for
// its conversation's owner: "s" and the first 128 bits of the SHA-256 of
// the owner, in hex. A search asks for it beside its words, so the index
// narrows to one principal's messages before anything is read; the
// stores still check the owner of every hit, so the token only speeds the
// search up and never decides who sees what. The migrations that index
// the journal compute the same token in SQL.
func SearchScope(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return "s" + hex.EncodeToString(sum[:16])
}

// SearchHit makes the hit of a stored message: its type, and its payload
// (the stored JSON), whose text the snippet is cut from.
func SearchHit(conversationID string, seq int64, typ string, date agentik.Time, payload string, q agentik.SearchQuery) (agentik.SearchHit, error) {
	var m struct {
		Content []agentik.Content `json:"content"`
	}
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return agentik.SearchHit{}, err
	}
	return agentik.SearchHit{
		ConversationID: conversationID, Seq: seq, Role: agentik.SearchRole(typ), Date: date,
		Snippet: agentik.Snippet(agentik.ContentSearchText(m.Content), q),
	}, nil
}
