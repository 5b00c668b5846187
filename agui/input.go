package agui

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentik/agentik"
	"github.com/google/uuid"
)

// Limits on RunAgentInput beyond the body size. They keep one request from
// making the facade do unbounded work before the core sees anything.
const (
	maxIDLen       = 512
	maxToolNameLen = 64 // OpenAI's limit for function names
	maxTools       = 128
	maxResume      = 128
)

// Thread ids. A threadId is a name the client chooses, so it can never be
// used as a conversation id directly: a caller who could create a
// conversation at an id of its choice could take the id another caller's
// thread resolves to, or learn from a 200 or a 404 that an id exists. A
// caller's thread therefore lives at an id derived from the caller and the
// name, which no other caller can create (every other way of creating a
// conversation makes a random id); a threadId that is a UUID names the
// caller's existing conversation of that id, as the native API does.
var (
	// legacyThreadNamespace made the ids of threads created before the
	// per-caller derivation; they are still found, never created.
	legacyThreadNamespace = uuid.MustParse("5d0f3c4e-8a57-4c44-9f6e-2b7a0e1c9d13")
	// threadNamespace is the namespace of derived thread ids. Changing it
	// would orphan every thread, so it is fixed forever.
	threadNamespace = uuid.MustParse("daf9a481-329b-4111-a786-39a1f092bb82")
)

// maxThreadProbes bounds the derived ids tried for one thread. Only an id
// taken before this derivation existed can push a thread to the next one.
const maxThreadProbes = 8

// ConversationID returns the id a new thread threadID of principal is
// created at: a SHA-256 name-based UUID (version 8) of the length-prefixed
// principal and thread name, so that no two (principal, name) pairs meet.
func ConversationID(principal, threadID string) string {
	return derivedThreadID(principal, threadID, 0)
}

func derivedThreadID(principal, threadID string, n int) string {
	data := fmt.Sprintf("%d:%s%d:%s#%d", len(principal), principal, len(threadID), threadID, n)
	return uuid.NewHash(sha256.New(), threadNamespace, []byte(data), 8).String()
}

// threadCandidates lists where the caller's thread may be: existing ids are
// used only when the caller already owns them (the threadId itself when it
// is a UUID, then the id the legacy derivation gave); fresh ids are tried in
// order, each used when the caller owns it or can create it.
func threadCandidates(principal, threadID string) (existing, fresh []string) {
	if u, err := uuid.Parse(threadID); err == nil && len(threadID) == 36 {
		existing = append(existing, u.String())
	}
	existing = append(existing, uuid.NewSHA1(legacyThreadNamespace, []byte(principal+"\x00"+threadID)).String())
	for n := range maxThreadProbes {
		fresh = append(fresh, derivedThreadID(principal, threadID, n))
	}
	return existing, fresh
}

// RunInput is a decoded, validated RunAgentInput: only what the facade uses.
// forwardedProps is accepted and ignored.
type RunInput struct {
	ThreadID    string
	RunID       string
	ParentRunID string
	Messages    []InputMessage
	Tools       []agentik.ToolSpec
	Context     []InputContext
	// Resume answers the interrupts of an earlier run (AG-UI 1.0), in order.
	Resume []ResumeEntry
	// State is input.state when it is a JSON object with members: the
	// conversation's shared state becomes it (SPEC §19). nil when absent,
	// null or {} — an empty state never wipes one (docs/state.md).
	State json.RawMessage

	// ProtocolVersion is input.protocolVersion, "" when absent (clients
	// before AG-UI 1.0 do not send it); it selects the dialect (dialect.go).
	ProtocolVersion string
}

// InputMessage is one message of input.messages. Content holds the parts the
// core understands (text, base64 images); it is set for user and tool
// messages only, the only roles the facade acts on.
type InputMessage struct {
	ID         string
	Role       string
	Content    []agentik.Content
	ToolCallID string // role tool
	Error      string // role tool: the client's tool failed
}

// ResumeEntry is one entry of input.resume: the answer to one interrupt.
type ResumeEntry struct {
	InterruptID string
	Status      string          // ResumeResolved or ResumeCancelled
	Payload     json.RawMessage // the answer (status resolved); nil when absent
}

// Resume statuses.
const (
	ResumeResolved  = "resolved"
	ResumeCancelled = "cancelled"
)

// InputContext is one entry of input.context.
type InputContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// wire shapes of the request; pointers tell absent from empty.
type wireInput struct {
	ThreadID    *string         `json:"threadId"`
	RunID       *string         `json:"runId"`
	ParentRunID *string         `json:"parentRunId"`
	Messages    *[]wireMessage  `json:"messages"`
	Tools       []wireTool      `json:"tools"`
	Context     []InputContext  `json:"context"`
	State       json.RawMessage `json:"state"`
	Forwarded   json.RawMessage `json:"forwardedProps"`
	Resume      []wireResume    `json:"resume"`

	ProtocolVersion *string `json:"protocolVersion"`
}

type wireResume struct {
	InterruptID *string         `json:"interruptId"`
	Status      *string         `json:"status"`
	Payload     json.RawMessage `json:"payload"`
	Metadata    json.RawMessage `json:"metadata"`
}

type wireMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wirePart struct {
	Type     string      `json:"type"`
	Text     *string     `json:"text"`
	Source   *wireSource `json:"source"`
	MIMEType string      `json:"mimeType"` // legacy "binary" part
	Data     string      `json:"data"`     // legacy "binary" part
	URL      string      `json:"url"`      // legacy "binary" part
}

type wireSource struct {
	Type     string `json:"type"` // data, url, file
	Value    string `json:"value"`
	MIMEType string `json:"mimeType"`
}

// defaultParameters is offered for a frontend tool that declares none: the
// model APIs want an object schema.
var defaultParameters = agentik.RawJSON(`{"type":"object","properties":{}}`)

// DecodeInput decodes and validates a RunAgentInput body. It is a pure
// function of the bytes (fuzzed). Errors are *agentik.Error: EMalformed for
// bytes that are not one JSON value, EInvalid for a value of the wrong shape.
func DecodeInput(b []byte) (RunInput, error) {
	var in RunInput
	w, err := decodeWire(b)
	if err != nil {
		return in, err
	}
	if err := checkBounds(w); err != nil {
		return in, err
	}
	if in.Resume, err = decodeResume(w.Resume); err != nil {
		return in, err
	}
	in.ThreadID, in.RunID = *w.ThreadID, *w.RunID
	if w.ParentRunID != nil {
		in.ParentRunID = *w.ParentRunID
	}
	if w.ProtocolVersion != nil {
		in.ProtocolVersion = *w.ProtocolVersion
	}
	in.Context = w.Context
	if in.Messages, err = decodeMessages(*w.Messages); err != nil {
		return in, err
	}
	if in.Tools, err = decodeTools(w.Tools); err != nil {
		return in, err
	}
	if in.State, err = decodeState(w.State); err != nil {
		return in, err
	}
	return in, nil
}

// decodeState takes input.state: absent, null or an object (the shared
// state is one); an empty object is no state to set.
func decodeState(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "state must be a JSON object")
	}
	if len(m) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || buf.Len() > agentik.MaxSharedState {
		return nil, agentik.Errorf(agentik.ETooLarge, "state is larger than %d bytes", agentik.MaxSharedState)
	}
	return buf.Bytes(), nil
}

// decodeWire decodes the body as exactly one JSON object.
func decodeWire(b []byte) (wireInput, error) {
	var w wireInput
	if len(bytes.TrimSpace(b)) == 0 {
		return w, agentik.Errorf(agentik.EMalformed, "request body is required")
	}
	if err := agentik.CheckJSON(b); err != nil {
		return w, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if typeErr.Field == "" {
				return w, agentik.Errorf(agentik.EInvalid, "RunAgentInput must be a JSON object")
			}
			return w, agentik.Errorf(agentik.EInvalid, "field %s has the wrong type (%s)", typeErr.Field, typeErr.Value)
		}
		return w, agentik.WrapError(agentik.EMalformed, "request body is not valid JSON", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return w, agentik.Errorf(agentik.EMalformed, "request body has data after the JSON value")
	}
	return w, nil
}

// checkBounds checks the required fields and the limits on the input.
func checkBounds(w wireInput) error {
	switch {
	case w.ThreadID == nil || *w.ThreadID == "":
		return agentik.Errorf(agentik.EInvalid, "threadId is required")
	case w.RunID == nil || *w.RunID == "":
		return agentik.Errorf(agentik.EInvalid, "runId is required")
	case w.Messages == nil:
		return agentik.Errorf(agentik.EInvalid, "messages is required (an array, possibly empty)")
	case len(*w.ThreadID) > maxIDLen || len(*w.RunID) > maxIDLen:
		return agentik.Errorf(agentik.EInvalid, "threadId and runId must be at most %d bytes", maxIDLen)
	case len(w.Tools) > maxTools:
		return agentik.Errorf(agentik.EInvalid, "at most %d tools", maxTools)
	case len(w.Resume) > maxResume:
		return agentik.Errorf(agentik.EInvalid, "at most %d resume entries", maxResume)
	}
	return nil
}

// decodeResume decodes input.resume: one answer per interrupt.
func decodeResume(ws []wireResume) ([]ResumeEntry, error) {
	var out []ResumeEntry
	answered := map[string]bool{}
	for i, r := range ws {
		switch {
		case r.InterruptID == nil || *r.InterruptID == "":
			return out, agentik.Errorf(agentik.EInvalid, "resume[%d].interruptId is required", i)
		case len(*r.InterruptID) > maxIDLen:
			return out, agentik.Errorf(agentik.EInvalid, "resume[%d].interruptId is longer than %d bytes", i, maxIDLen)
		case r.Status == nil || (*r.Status != ResumeResolved && *r.Status != ResumeCancelled):
			return out, agentik.Errorf(agentik.EInvalid, "resume[%d].status must be \"resolved\" or \"cancelled\"", i)
		case answered[*r.InterruptID]:
			return out, agentik.Errorf(agentik.EInvalid, "resume[%d] answers interrupt %q a second time", i, *r.InterruptID)
		}
		answered[*r.InterruptID] = true
		e := ResumeEntry{InterruptID: *r.InterruptID, Status: *r.Status}
		if p := bytes.TrimSpace(r.Payload); len(p) > 0 && string(p) != "null" {
			e.Payload = json.RawMessage(p)
		}
		out = append(out, e)
	}
	return out, nil
}

// decodeMessages decodes input.messages; ids are required and unique.
func decodeMessages(ws []wireMessage) ([]InputMessage, error) {
	var out []InputMessage
	seen := map[string]bool{}
	for i, m := range ws {
		if m.ID == "" {
			return out, agentik.Errorf(agentik.EInvalid, "messages[%d].id is required", i)
		}
		if len(m.ID) > maxIDLen {
			return out, agentik.Errorf(agentik.EInvalid, "messages[%d].id is longer than %d bytes", i, maxIDLen)
		}
		msg, err := decodeMessage(m)
		if err != nil {
			return out, agentik.Errorf(agentik.EInvalid, "messages[%d]%s", i, agentik.ErrorMessage(err))
		}
		if seen[m.ID] {
			return out, agentik.Errorf(agentik.EInvalid, "messages[%d].id %q is used twice", i, m.ID)
		}
		seen[m.ID] = true
		out = append(out, msg)
	}
	return out, nil
}

// decodeMessage decodes one message by its role. Its errors name the field
// after the message (".content: …"), without the message's index.
func decodeMessage(m wireMessage) (InputMessage, error) {
	out := InputMessage{ID: m.ID, Role: m.Role}
	switch m.Role {
	case RoleUser:
		parts, err := decodeContent(m.Content, true)
		if err == nil {
			err = agentik.ValidateContent(parts)
		}
		if err != nil {
			return out, agentik.Errorf(agentik.EInvalid, ".content: %s", agentik.ErrorMessage(err))
		}
		out.Content = parts
	case RoleTool:
		if m.ToolCallID == "" {
			return out, agentik.Errorf(agentik.EInvalid, ".toolCallId is required for a tool message")
		}
		parts, err := decodeContent(m.Content, false)
		if err != nil {
			return out, agentik.Errorf(agentik.EInvalid, ".content: %s", agentik.ErrorMessage(err))
		}
		out.Content, out.ToolCallID, out.Error = parts, m.ToolCallID, m.Error
	case RoleAssistant, RoleSystem, RoleDeveloper, RoleReasoning, RoleActivity:
		// The server's own journal is the truth for these; kept for
		// nothing but the duplicate-id check.
	case "":
		return out, agentik.Errorf(agentik.EInvalid, ".role is required")
	default:
		return out, agentik.Errorf(agentik.EInvalid, ".role %q is not an AG-UI role", m.Role)
	}
	return out, nil
}

// decodeTools decodes input.tools: the client's frontend tools.
func decodeTools(ws []wireTool) ([]agentik.ToolSpec, error) {
	var out []agentik.ToolSpec
	names := map[string]bool{}
	for i, t := range ws {
		if !validToolName(t.Name) {
			return out, agentik.Errorf(agentik.EInvalid, "tools[%d].name must be 1 to %d letters, digits, _ or -", i, maxToolNameLen)
		}
		if names[t.Name] {
			return out, agentik.Errorf(agentik.EInvalid, "tools[%d].name %q is used twice", i, t.Name)
		}
		names[t.Name] = true
		params := agentik.RawJSON(bytes.TrimSpace(t.Parameters))
		if len(params) == 0 || string(params) == "null" {
			params = defaultParameters
		} else if params[0] != '{' {
			return out, agentik.Errorf(agentik.EInvalid, "tools[%d].parameters must be a JSON Schema object", i)
		}
		out = append(out, agentik.ToolSpec{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return out, nil
}

func validToolName(s string) bool {
	if s == "" || len(s) > maxToolNameLen {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// decodeContent turns an AG-UI content (a string or an array of parts) into
// core content. Only text and inline (base64 "data") images reach the core:
// the core stores images as bytes, so URL and provider-file sources, audio,
// video and documents are refused rather than silently dropped. Empty text
// parts are skipped. A user message must have content; a tool result may be
// empty (nil).
func decodeContent(raw json.RawMessage, user bool) ([]agentik.Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if user {
			return nil, agentik.Errorf(agentik.EInvalid, "is required")
		}
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, agentik.Errorf(agentik.EInvalid, "is not a valid string")
		}
		if s == "" {
			return nil, nil
		}
		return []agentik.Content{agentik.Text(s)}, nil
	}
	var parts []wirePart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "must be a string or an array of content parts")
	}
	var out []agentik.Content
	for i, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == nil {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: text is required", i)
			}
			if *p.Text != "" {
				out = append(out, agentik.Text(*p.Text))
			}
		case "image":
			if p.Source == nil {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: source is required", i)
			}
			if p.Source.Type != "data" {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: only inline images (source type \"data\") are supported, not %q", i, p.Source.Type)
			}
			c, err := imagePart(p.Source.MIMEType, p.Source.Value)
			if err != nil {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: %s", i, agentik.ErrorMessage(err))
			}
			out = append(out, c)
		case "binary": // pre-1.0 shape, still sent by older clients
			if !strings.HasPrefix(p.MIMEType, "image/") || p.Data == "" {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: only inline images (binary with image mimeType and data) are supported", i)
			}
			c, err := imagePart(p.MIMEType, p.Data)
			if err != nil {
				return nil, agentik.Errorf(agentik.EInvalid, "part %d: %s", i, agentik.ErrorMessage(err))
			}
			out = append(out, c)
		case "audio", "video", "document":
			return nil, agentik.Errorf(agentik.EInvalid, "part %d: %s content is not supported", i, p.Type)
		default:
			return nil, agentik.Errorf(agentik.EInvalid, "part %d: unknown content part type %q", i, p.Type)
		}
	}
	return out, nil
}

func imagePart(mime, data string) (agentik.Content, error) {
	c := agentik.Content{Type: agentik.ContentImage, MIME: mime, Data: data}
	if err := c.Validate(); err != nil {
		return c, err
	}
	// Re-encode so that the stored form is canonical (padded, standard).
	raw, _ := base64.StdEncoding.DecodeString(data)
	c.Data = base64.StdEncoding.EncodeToString(raw)
	return c, nil
}

// String is for logs.
func (in RunInput) String() string {
	return fmt.Sprintf("thread=%q run=%q messages=%d tools=%d resume=%d", in.ThreadID, in.RunID, len(in.Messages), len(in.Tools), len(in.Resume))
}
