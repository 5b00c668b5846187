package agentik

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Content types.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// Image MIME types the core accepts.
var ImageMIMEs = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// Content is one part of a message: text, or an image carried as base64.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	Data string `json:"data,omitempty"` // base64 (standard alphabet, padded)
	MIME string `json:"mime,omitempty"`
}

// Text returns a text content part.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Image returns an image content part of raw bytes.
func Image(mime string, raw []byte) Content {
	return Content{Type: ContentImage, MIME: mime, Data: base64.StdEncoding.EncodeToString(raw)}
}

// Validate checks one part: a known type, non-empty text, an allowed image
// MIME with valid non-empty base64. Errors have code EInvalid.
func (c Content) Validate() error {
	switch c.Type {
	case ContentText:
		if c.Text == "" {
			return Errorf(EInvalid, "text content is empty")
		}
		// NUL reaches no model usefully, and PostgreSQL text cannot hold it.
		if strings.IndexByte(c.Text, 0) >= 0 {
			return Errorf(EInvalid, "text content contains a NUL character")
		}
	case ContentImage:
		if !knownImageMIME(c.MIME) {
			return Errorf(EInvalid, "image mime %q is not one of image/png, image/jpeg, image/webp, image/gif", c.MIME)
		}
		if c.Data == "" {
			return Errorf(EInvalid, "image data is empty")
		}
		if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
			return Errorf(EInvalid, "image data is not valid base64")
		}
	case "":
		return Errorf(EInvalid, "content part has no type")
	default:
		return Errorf(EInvalid, "unknown content type %q", c.Type)
	}
	return nil
}

// Limits of one message, whatever the facade.
const (
	// MaxContentParts bounds the parts of one message.
	MaxContentParts = 256
	// DefaultMaxTextBytes is the default limit of the text of one user
	// message, all parts together: far more than any model's context takes
	// in one message.
	DefaultMaxTextBytes = 1 << 20
)

// ValidateContent checks a message body: at least one part and at most
// MaxContentParts (ETooLarge), each valid.
func ValidateContent(parts []Content) error {
	if len(parts) == 0 {
		return Errorf(EInvalid, "content is empty")
	}
	if len(parts) > MaxContentParts {
		return Errorf(ETooLarge, "content has %d parts; at most %d are taken", len(parts), MaxContentParts)
	}
	for _, p := range parts {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// HasImage reports whether any part is an image.
func HasImage(parts []Content) bool {
	for _, p := range parts {
		if p.Type == ContentImage {
			return true
		}
	}
	return false
}

// JoinText concatenates the text parts.
func JoinText(parts []Content) string {
	if len(parts) == 1 && parts[0].Type == ContentText {
		return parts[0].Text
	}
	var n int
	for _, p := range parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		if p.Type == ContentText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// DefaultMaxImageBytes is the default limit of one decoded image: what
// OpenAI-compatible endpoints commonly accept per image, well under the
// default request body limit.
const DefaultMaxImageBytes = 10 << 20

// ValidateImage checks an image part as the model will receive it: an allowed
// MIME, valid base64, at most maxBytes once decoded (ETooLarge), and bytes
// that really are an image of that MIME, judged by the file header. A header
// that names another allowed type is refused too: endpoints reject an image
// whose data URI lies about its type. maxBytes <= 0 means
// DefaultMaxImageBytes. Other errors have code EInvalid.
func (c Content) ValidateImage(maxBytes int) error {
	if c.Type != ContentImage {
		return Errorf(EInvalid, "content part is not an image")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxImageBytes
	}
	if !knownImageMIME(c.MIME) {
		return Errorf(EInvalid, "image mime %q is not one of image/png, image/jpeg, image/webp, image/gif", c.MIME)
	}
	if c.Data == "" {
		return Errorf(EInvalid, "image data is empty")
	}
	// Refuse an oversized image before decoding it.
	if base64.StdEncoding.DecodedLen(len(c.Data)) > maxBytes+2 {
		return Errorf(ETooLarge, "image is larger than %d bytes", maxBytes)
	}
	raw, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return Errorf(EInvalid, "image data is not valid base64")
	}
	if len(raw) > maxBytes {
		return Errorf(ETooLarge, "image is larger than %d bytes", maxBytes)
	}
	switch got := SniffImage(raw); got {
	case c.MIME:
		return nil
	case "":
		return Errorf(EInvalid, "image data is not a valid %s file", c.MIME)
	default:
		return Errorf(EInvalid, "image data is %s, not %s", got, c.MIME)
	}
}

// ValidateInput checks a message body a user sends: ValidateContent, then
// ValidateImage for every image part.
func ValidateInput(parts []Content, maxImageBytes int) error {
	if err := ValidateContent(parts); err != nil {
		return err
	}
	for _, p := range parts {
		if p.Type == ContentImage {
			if err := p.ValidateImage(maxImageBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// CanonicalImages returns parts with every image's base64 in canonical form
// (standard alphabet, padded, no line breaks), so equal images are equal
// text and stores can keep one copy. Parts that cannot be decoded, and
// slices without such images, are returned as they are.
func CanonicalImages(parts []Content) []Content {
	out := parts
	for i, p := range parts {
		if p.Type != ContentImage || p.Data == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			continue
		}
		if canon := base64.StdEncoding.EncodeToString(raw); canon != p.Data {
			if &out[0] == &parts[0] {
				out = append([]Content(nil), parts...)
			}
			out[i].Data = canon
		}
	}
	return out
}

// SniffImage returns the MIME type of an image from its header, or "" when b
// does not start like a PNG, JPEG, WebP or GIF file.
func SniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 16 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:12]) == "WEBP" &&
		(string(b[12:16]) == "VP8 " || string(b[12:16]) == "VP8L" || string(b[12:16]) == "VP8X"):
		return "image/webp"
	}
	return ""
}

func knownImageMIME(m string) bool {
	for _, k := range ImageMIMEs {
		if m == k {
			return true
		}
	}
	return false
}

// MessageContext says who sent a message through which facade.
type MessageContext struct {
	Origin   *Origin           `json:"origin,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Bounds of a message's context: what a facade or a client puts beside the
// text is bounded like the text (SPEC §3), so that it cannot carry what
// the text limit refuses.
const (
	// MaxContextBytes bounds the origin's fields and the metadata's keys
	// and values of one message together.
	MaxContextBytes = 64 << 10
	// MaxMetadataEntries bounds the metadata keys of one message.
	MaxMetadataEntries = 256
)

// Bytes returns the size of the context's strings: origin fields, metadata
// keys and values.
func (m *MessageContext) Bytes() int64 {
	if m == nil {
		return 0
	}
	var n int64
	if o := m.Origin; o != nil {
		n += int64(len(o.Channel) + len(o.User) + len(o.DisplayName) + len(o.ScheduleID))
	}
	for k, v := range m.Metadata {
		n += int64(len(k) + len(v))
	}
	return n
}

// Validate refuses a context beyond MaxContextBytes or MaxMetadataEntries
// (too_large).
func (m *MessageContext) Validate() error {
	if m == nil {
		return nil
	}
	if len(m.Metadata) > MaxMetadataEntries {
		return Errorf(ETooLarge, "the message's metadata has %d keys; at most %d are taken", len(m.Metadata), MaxMetadataEntries)
	}
	if m.Bytes() > MaxContextBytes {
		return Errorf(ETooLarge, "the message's context (origin and metadata) is larger than %d bytes", MaxContextBytes)
	}
	return nil
}

// Origin identifies the sender of a message.
type Origin struct {
	Channel     string `json:"channel,omitempty"`
	User        string `json:"user,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	ScheduleID  string `json:"schedule_id,omitempty"` // channel "schedule": the schedule that sent it
}

// TurnTokens counts the tokens of one turn.
type TurnTokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
}

// Add returns the sum of t and u.
func (t TurnTokens) Add(u TurnTokens) TurnTokens {
	return TurnTokens{Input: t.Input + u.Input, Output: t.Output + u.Output}
}

// RawJSON is a JSON value kept verbatim (tool arguments).
type RawJSON = json.RawMessage
