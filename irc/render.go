package irc

import (
	"strings"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"
)

// maxLine is the IRC line limit without tags, CR-LF included (RFC 1459).
const maxLine = 512

// vendor is the prefix of Agentik's own message tags: a host name, as the
// message-tags specification asks of vendor-specific tags.
const vendor = "agentik.github.io/"

// budget returns how many bytes of text fit in the last parameter of
// ":src cmd target :<text>\r\n" within the line limit, extra bytes kept
// back (CTCP framing).
func budget(src, cmd, target string, extra int) int {
	return maxLine - 2 - (1 + len(src) + 1 + len(cmd) + 1 + len(target) + 2) - extra
}

// cut returns where to end the first piece of s, which is longer than max
// (max >= 4): after the last space that keeps the piece within max bytes,
// else at the last UTF-8 boundary within max. It depends only on s[:max+1],
// so a stream can cut as soon as it holds more than max bytes and get the
// pieces a cut of the whole line would give.
func cut(s string, max int) int {
	if i := strings.LastIndexByte(s[:max+1], ' '); i >= 1 {
		if i == max { // the space just past the limit ends a piece of exactly max bytes
			return max
		}
		return i + 1
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 { // not UTF-8 at all; cut anyway
		return max
	}
	return i
}

// splitLine splits one line (no line breaks) into pieces of at most max
// bytes, at word boundaries where it can, never inside a UTF-8 sequence.
// Pieces are right-trimmed; blank pieces are dropped.
func splitLine(s string, max int, emit func(string)) {
	for len(s) > max {
		n := cut(s, max)
		emitPiece(s[:n], emit)
		s = afterCut(s[n:])
	}
	emitPiece(s, emit)
}

// afterCut drops the space a cut left at the start of the rest (the line
// was cut just before it).
func afterCut(rest string) string {
	if rest != "" && rest[0] == ' ' {
		return rest[1:]
	}
	return rest
}

func emitPiece(p string, emit func(string)) {
	if p = strings.TrimRight(p, " \t"); p != "" {
		emit(p)
	}
}

// splitText splits text into the lines it is sent as: on line breaks, then
// at word boundaries within max bytes. Blank lines are dropped.
func splitText(text string, max int) []string {
	var out []string
	emit := func(p string) { out = append(out, p) }
	for line := range strings.SplitSeq(clean(text), "\n") {
		splitLine(line, max, emit)
	}
	return out
}

// clean makes text safe to carry in IRC lines: CR-LF and CR become LF, NUL
// is dropped and \x01 (which would start a CTCP) becomes a space. Invalid
// UTF-8 is replaced.
func clean(s string) string {
	if !strings.ContainsAny(s, "\r\x00\x01") && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.NewReplacer("\r", "\n", "\x00", "", "\x01", " ").Replace(s)
}

// oneLine squeezes text into one line of at most max bytes: line breaks
// become spaces, and a cut text ends with "…".
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(clean(s)), " ")
	if len(s) <= max {
		return s
	}
	if max < 4 {
		return ircmsg.TruncateUTF8Safe(s, max)
	}
	return ircmsg.TruncateUTF8Safe(s, max-len("…")) + "…"
}

// streamSplitter turns the deltas of one answer into complete lines as they
// are written: a line is emitted at its line break, or — when it grows past
// the budget — its first piece is emitted at a word boundary. flush emits
// what is left when the answer is complete.
type streamSplitter struct {
	buf []byte
	max int
}

func (s *streamSplitter) write(text string, emit func(string)) {
	s.buf = append(s.buf, clean(text)...)
	for {
		if i := indexByte(s.buf, '\n'); i >= 0 {
			line := string(s.buf[:i])
			s.buf = s.buf[i+1:]
			splitLine(line, s.max, emit)
			continue
		}
		if len(s.buf) > s.max {
			n := cut(string(s.buf[:s.max+1]), s.max)
			emitPiece(string(s.buf[:n]), emit)
			s.buf = s.buf[n:]
			if len(s.buf) > 0 && s.buf[0] == ' ' {
				s.buf = s.buf[1:]
			}
			continue
		}
		return
	}
}

// flush emits the rest (the last line) through emit and empties s.
func (s *streamSplitter) flush(emit func(string)) {
	rest := string(s.buf)
	s.buf = s.buf[:0]
	splitLine(rest, s.max, emit)
}

func (s *streamSplitter) reset() { s.buf = s.buf[:0] }

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
