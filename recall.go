package agentik

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SearchHit is one journal message a search of a principal's conversations
// found (SPEC §19, conversation_search): where it is, who said it, when,
// and a piece of its text around the words searched for.
type SearchHit struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	Role           string `json:"role"` // RoleUser or RoleAssistant
	Date           Time   `json:"date"`
	Snippet        string `json:"snippet"`
}

// Bounds of a search.
const (
	DefaultSearchLimit  = 10
	MaxSearchLimit      = 50
	MaxSearchQueryBytes = 1000 // a query longer than this is refused
	MaxSearchTerms      = 32   // words of one query
	// SnippetRunes bounds a hit's snippet, ellipses aside.
	SnippetRunes = 240
)

// SearchQuery is a parsed full-text query: the words to find, all of them,
// in any order. A word is a run of letters and digits of what the user
// typed; everything else (quotes, operators, punctuation) only separates
// words, so no query can be read as the index's query syntax, and a store
// quotes each word as a literal besides.
type SearchQuery struct {
	Terms []string
}

// ParseSearchQuery parses a user's query. Errors are EInvalid: an empty
// query, one over MaxSearchQueryBytes or MaxSearchTerms words, one that is
// not UTF-8 or holds a NUL or other control character, and one without a
// letter or digit to search for.
func ParseSearchQuery(s string) (SearchQuery, error) {
	switch {
	case strings.TrimSpace(s) == "":
		return SearchQuery{}, Errorf(EInvalid, "the search query is empty")
	case len(s) > MaxSearchQueryBytes:
		return SearchQuery{}, Errorf(EInvalid, "the search query is longer than %d bytes", MaxSearchQueryBytes)
	case !utf8.ValidString(s):
		return SearchQuery{}, Errorf(EInvalid, "the search query is not UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !unicode.IsSpace(r) }) >= 0:
		return SearchQuery{}, Errorf(EInvalid, "the search query holds a control character")
	}
	q := SearchQuery{Terms: SearchWords(s)}
	switch {
	case len(q.Terms) == 0:
		return SearchQuery{}, Errorf(EInvalid, "the search query has no word to search for")
	case len(q.Terms) > MaxSearchTerms:
		return SearchQuery{}, Errorf(EInvalid, "the search query has more than %d words", MaxSearchTerms)
	}
	return q, nil
}

// Text is the query's terms separated by spaces: what a store hands a
// parser that reads plain text (PostgreSQL's plainto_tsquery).
func (q SearchQuery) Text() string { return strings.Join(q.Terms, " ") }

// SearchLimit is the number of hits a search with limit returns: the
// default for 0, else limit; EInvalid outside 0..MaxSearchLimit.
func SearchLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultSearchLimit, nil
	case limit < 0 || limit > MaxSearchLimit:
		return 0, Errorf(EInvalid, "limit must be between 1 and %d", MaxSearchLimit)
	}
	return limit, nil
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// SearchWords splits s into the words a search finds and is made of: the
// runs of letters and digits, in order, repeats and case kept. A query's
// terms are its words; a store that splits a message's text itself
// (PostgreSQL's vectors, storeutil.SearchVector) splits it the same way,
// so every term of a query is a word of the messages it finds.
func SearchWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !isWordRune(r) })
}

// MessageSearcher is the full-text index of a store's view of one agent
// (SPEC §19): the user and assistant messages of the agent's conversations
// (their text parts; tool calls and results are not indexed), kept in the
// same transaction as the journal and removed with their conversation.
// Temporal conversations are never in it: their store keeps nothing on
// disk.
//
// SearchMessages returns the messages of owner's conversations with the
// agent that contain every term of q, newest first, at most limit (1 to
// MaxSearchLimit). Safe for concurrent use; errors are EUnavailable when
// the database cannot be read.
type MessageSearcher interface {
	SearchMessages(ctx context.Context, owner string, q SearchQuery, limit int) ([]SearchHit, error)
}

// SearchRequest is a search of the caller's messages (GET {p}/memory/search,
// the conversation_search tool). Limit 0 is DefaultSearchLimit.
type SearchRequest struct {
	Query string
	Limit int
}

// Recall searches the messages of the principal in ctx (PrincipalFrom)
// with one agent, across all their conversations: full-text, and by
// meaning when embeddings are configured. Errors are EInvalid for a bad
// query or limit, EUnavailable when the store cannot be read. Safe for
// concurrent use.
type Recall interface {
	Search(ctx context.Context, req SearchRequest) ([]SearchHit, error)
}

// SearchText is the text of m a search indexes: the text parts of a user
// or assistant message, one a line; "" for every other message.
func SearchText(m *Message) string {
	if m.Type != MsgUser && m.Type != MsgAssistant {
		return ""
	}
	return ContentSearchText(m.Content)
}

// ContentSearchText is the text parts of content, one a line.
func ContentSearchText(content []Content) string {
	var b strings.Builder
	for _, c := range content {
		if c.Type != ContentText || c.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// SearchRole is the role of a hit on a message of type typ.
func SearchRole(typ string) string {
	if typ == MsgUser {
		return RoleUser
	}
	return RoleAssistant
}

// Snippet returns up to SnippetRunes runes of text around the first place
// one of q's words occurs (case-insensitively), on one line, with "…"
// where it was cut: the start of text when no word is found there.
func Snippet(text string, q SearchQuery) string {
	runes := []rune(strings.Join(strings.Fields(text), " "))
	at := firstWord(runes, q)
	start := max(0, at-SnippetRunes/3)
	end := min(len(runes), start+SnippetRunes)
	start = max(0, min(start, end-SnippetRunes))
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.WriteString(string(runes[start:end]))
	if end < len(runes) {
		b.WriteString("…")
	}
	return b.String()
}

// firstWord is the rune index of the earliest word of q in runes (0 when
// none is there).
func firstWord(runes []rune, q SearchQuery) int {
	lower := make([]rune, len(runes))
	for i, r := range runes {
		lower[i] = unicode.ToLower(r)
	}
	best := -1
	for _, t := range q.Terms {
		if i := runeIndex(lower, []rune(strings.ToLower(t))); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return max(best, 0)
}

// runeIndex is the index of the first occurrence of w in s, or -1.
func runeIndex(s, w []rune) int {
	if len(w) == 0 {
		return -1
	}
outer:
	for i := 0; i+len(w) <= len(s); i++ {
		for j, r := range w {
			if s[i+j] != r {
				continue outer
			}
		}
		return i
	}
	return -1
}

// Bounds of semantic recall (SPEC §19, memory.embeddings).
const (
	// MaxScanVectors bounds a search by meaning: it compares the query
	// with the vectors of the principal's newest MaxScanVectors messages
	// with the agent, and never with older ones (brute force, in memory).
	MaxScanVectors = 5000
	// MaxEmbedRunes bounds the text of a message an embeddings endpoint is
	// sent: its first MaxEmbedRunes runes.
	MaxEmbedRunes = 8000
)

// MessageText is a message the vector index holds no vector of yet: its
// id and SearchText.
type MessageText struct {
	ID   string
	Text string
}

// MessageVector is the embedding of message ID. A nil or empty Vector
// records that the message cannot be embedded (the endpoint refused its
// text): it is not asked for again, and no search finds it by meaning.
type MessageVector struct {
	ID     string
	Vector []float32
}

// VectorQuery is a search by meaning: the messages whose vectors of Model
// are the nearest to Vector by cosine similarity, at least MinSimilarity,
// at most Limit (1 to MaxSearchLimit), among the newest MaxScanVectors of
// the owner's.
type VectorQuery struct {
	Model         string
	Vector        []float32
	MinSimilarity float32
	Limit         int
}

// MessageEmbeddings is the vector index of a store's view of one agent
// (SPEC §19, semantic recall): for each message of the full-text index
// (MessageSearcher), at most one vector, under the embedding model's name,
// deleted with its message in the transaction that deletes it. Vectors
// are written after the message, by a background worker, never in a
// turn's transaction. Safe for concurrent use, by several processes too:
// writes are idempotent. Errors are EUnavailable when the database cannot
// be read or written.
type MessageEmbeddings interface {
	// UnembeddedMessages returns up to limit messages dated since or later
	// (the zero time: all) with no vector of model (none, or one of
	// another model), newest first. Its cost follows the messages dated
	// since or later, not the whole journal.
	UnembeddedMessages(ctx context.Context, model string, since time.Time, limit int) ([]MessageText, error)
	// PutEmbeddings stores the vectors of model, replacing those of
	// another model; the vector of a message deleted meanwhile is dropped.
	PutEmbeddings(ctx context.Context, model string, vs []MessageVector) error
	// NearestMessages returns owner's messages with the agent nearest to
	// q, nearest first; a hit's snippet is the start of its text.
	NearestMessages(ctx context.Context, owner string, q VectorQuery) ([]SearchHit, error)
}
