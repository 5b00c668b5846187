package engine

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentik/agentik"
)

// A conversation created without a title is named after the first words of
// its first message, when that message is committed (docs/design.md,
// "Titles"): every front door gets titled conversations, the same way, at
// no model call. A title the conversation already has — given at creation
// or set before — is never replaced, and it is renamed like any other.

// maxAutoTitle bounds a title from the first message, in characters.
const maxAutoTitle = 60

// titleTimeout bounds the title's store calls: the message is committed
// whatever becomes of its title, also when the sender has gone.
const titleTimeout = 10 * time.Second

// firstWords is the title of a conversation whose first message is
// content: its text with whitespace and control characters folded to
// single spaces, whole if it has at most maxAutoTitle characters, else cut
// after the last word that fits (or inside a first word too long to fit)
// and marked with "…". It is "" when the message has no words.
func firstWords(content []agentik.Content) string {
	var words []string
	for _, p := range content {
		if p.Type != agentik.ContentText {
			continue
		}
		text := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, strings.ToValidUTF8(p.Text, ""))
		words = append(words, strings.Fields(text)...)
	}
	if t := strings.Join(words, " "); utf8.RuneCountInString(t) <= maxAutoTitle {
		return t
	}
	const room = maxAutoTitle - 1 // for the "…"
	var b strings.Builder
	n := 0
	for _, w := range words {
		wn := utf8.RuneCountInString(w)
		if n == 0 && wn > room {
			b.WriteString(string([]rune(w)[:room]))
			break
		}
		if n > 0 {
			wn++ // the space before it
		}
		if n+wn > room {
			break
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		n += wn
	}
	if t := strings.TrimRight(b.String(), ",;:.-–—"); t != "" {
		return t + "…"
	}
	return b.String() + "…"
}

// titleFromFirst names the conversation after content, the text of its
// first message just committed, unless it has a title. A failure is
// logged, not returned: the message is sent either way. Temporal
// conversations are left alone: nobody lists them, and they emit no agent
// events.
func (c *conv) titleFromFirst(ctx context.Context, content []agentik.Content) {
	if c.temporal {
		return
	}
	title := firstWords(content)
	if title == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), titleTimeout)
	defer cancel()
	// Under titleMu, as every rename here: a rename racing this message is
	// either read below (and kept) or made after this title.
	c.titleMu.Lock()
	defer c.titleMu.Unlock()
	rec, err := c.store.GetConversation(ctx, c.id)
	if err == nil && rec.Title != "" {
		return
	}
	if err == nil {
		// Not setTitle: its info takes mu, which a running turn may hold
		// while a subscriber of this very request is yet to read.
		_, err = c.storeTitle(ctx, title)
	}
	if err != nil && !agentik.IsNotFound(err) { // deleted meanwhile: nothing to name
		c.e.log.Warn("title a conversation from its first message", "conversation", c.id, "err", err)
	}
}
