package irc

import (
	"crypto/sha256"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentik/agentik"
)

// Length limits advertised in ISUPPORT.
const (
	maxNickLen    = 32
	maxChannelLen = 64
	maxTopicLen   = 1024 // the core's title limit
	maxUserLen    = 16
)

// fold is the server's case mapping (CASEMAPPING=ascii): nicks and channel
// names that differ only in ASCII case are the same.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// validNick reports whether s is a nickname this server accepts: RFC 2812
// letters, digits and specials, not starting with a digit or '-'.
func validNick(s string) bool {
	if s == "" || len(s) > maxNickLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', strings.IndexByte("[]\\`_^{|}", c) >= 0:
		case '0' <= c && c <= '9', c == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// nickOf makes a nickname from a name that may not be one (an agent id, an
// origin's display name): invalid characters become '-', a leading digit or
// '-' gets a '_' in front, and it is cut to the nick length.
func nickOf(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < maxNickLen; i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || strings.IndexByte("[]\\`_^{|}", c) >= 0
		if !ok {
			c = '-'
		}
		if b.Len() == 0 && ('0' <= c && c <= '9' || c == '-') {
			b.WriteByte('_')
		}
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		return "user"
	}
	s := b.String()
	if len(s) > maxNickLen {
		s = s[:maxNickLen]
	}
	return s
}

// validChannel reports whether s is a channel name this server accepts: '#'
// then up to CHANNELLEN-1 bytes of UTF-8 without spaces, commas, BEL or
// other control characters.
func validChannel(s string) bool {
	if len(s) < 2 || len(s) > maxChannelLen || s[0] != '#' || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s[1:] {
		if r <= ' ' || r == ',' || r == 0x7f {
			return false
		}
	}
	return true
}

// A channel name is one of
//
//	#<conversation-id>      an existing conversation of the caller, of any agent
//	#<name>                 the caller's conversation <name> with the default agent
//	#<name>@<agent>         the caller's conversation <name> with that agent
//
// Named conversations have an id derived from the agent, the principal and
// the folded name, so the same name always reaches the same conversation of
// the same principal, and never another principal's.

// channelID derives the id of a named conversation: a version-8 UUID (RFC
// 9562) from a SHA-256 of the agent, the principal and the folded name.
func channelID(agentID, principal, name string) string {
	h := sha256.Sum256([]byte("agentik irc channel\x00" + agentID + "\x00" + principal + "\x00" + name))
	var u uuid.UUID
	copy(u[:], h[:16])
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u.String()
}

// directID derives the id of a principal's direct conversation with an
// agent (PRIVMSG to the agent's nick). The name part cannot be a channel
// name, so it never equals a channel's id.
func directID(agentID, principal string) string {
	return channelID(agentID, principal, "direct")
}

// splitAgent splits "#name@agent" into "#name" and "agent" ("" when the
// name has no agent part).
func splitAgent(folded string) (base, agent string) {
	if i := strings.LastIndexByte(folded, '@'); i > 1 {
		return folded[:i], folded[i+1:]
	}
	return folded, ""
}

// isConversationName reports whether a folded channel name is "#<id>".
func isConversationName(folded string) bool {
	return agentik.ValidID(folded[1:])
}
