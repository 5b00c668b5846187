package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The facade works on one version-neutral model (the types below) and
// converts at the edge: v1.0 is proto-JSON (ROLE_USER, TASK_STATE_WORKING,
// parts as {"text":…} / {"raw":…}, results wrapped as {"task":…}), 0.3 is the
// JSON-Schema form (a "kind" on every object, lower-case enums, parts as
// {"kind":"text",…}). Every slice is emitted as [] rather than null and every
// optional field is omitted when empty, as both specifications ask.

// Version is a protocol version spoken on one request.
type Version int

// Protocol versions.
const (
	V1  Version = iota // A2A 1.0 (PascalCase methods)
	V03                // A2A 0.3 (slash methods)
)

func (v Version) String() string {
	if v == V03 {
		return "0.3"
	}
	return "1.0"
}

// Task states, version-neutral (the 0.3 spelling).
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateCompleted     = "completed"
	StateCanceled      = "canceled"
	StateFailed        = "failed"
	StateRejected      = "rejected"
	StateAuthRequired  = "auth-required"
	StateUnknown       = "unknown"
)

// Terminal reports whether a task in state s can change no more.
func Terminal(s string) bool {
	return s == StateCompleted || s == StateCanceled || s == StateFailed || s == StateRejected
}

// Roles.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// Part is one piece of a message or artifact: exactly one of Text, Raw, URL
// or Data is set (Kind says which).
type Part struct {
	Kind      string // "text", "raw", "url" or "data"
	Text      string
	Raw       []byte
	URL       string
	Data      json.RawMessage
	MediaType string
	Filename  string
	Metadata  map[string]any
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: "text", Text: s} }

// Message is a message between a client and an agent.
type Message struct {
	ID        string
	ContextID string
	TaskID    string
	Role      string
	Parts     []Part
	Metadata  map[string]any
}

// Status is a task's state at one moment.
type Status struct {
	State     string
	Message   *Message
	Timestamp time.Time
}

// Artifact is an output of a task.
type Artifact struct {
	ID    string
	Name  string
	Parts []Part
}

// Task is one unit of work: here, one turn of a conversation.
type Task struct {
	ID        string
	ContextID string
	Status    Status
	Artifacts []Artifact
	History   []Message
}

// StatusUpdate is a streamed change of a task's status. Final marks the last
// event of a stream (0.3 carries it on the wire; in 1.0 a terminal state ends
// the stream).
type StatusUpdate struct {
	TaskID    string
	ContextID string
	Status    Status
	Final     bool
}

// ArtifactUpdate is a streamed artifact or artifact chunk.
type ArtifactUpdate struct {
	TaskID    string
	ContextID string
	Artifact  Artifact
	Append    bool
	LastChunk bool
}

// Event is one of *Task, *Message, *StatusUpdate, *ArtifactUpdate.
type Event any

// ---- v1.0 wire form ----

type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"` // base64
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

type v1Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []v1Part       `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type v1Status struct {
	State     string     `json:"state"`
	Message   *v1Message `json:"message,omitempty"`
	Timestamp string     `json:"timestamp,omitempty"`
}

type v1Artifact struct {
	ArtifactID string   `json:"artifactId"`
	Name       string   `json:"name,omitempty"`
	Parts      []v1Part `json:"parts"`
}

type v1Task struct {
	ID        string       `json:"id"`
	ContextID string       `json:"contextId"`
	Status    v1Status     `json:"status"`
	Artifacts []v1Artifact `json:"artifacts,omitempty"`
	History   []v1Message  `json:"history,omitempty"`
}

type v1StatusUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Status    v1Status `json:"status"`
}

type v1ArtifactUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Artifact  v1Artifact `json:"artifact"`
	Append    bool       `json:"append,omitempty"`
	LastChunk bool       `json:"lastChunk,omitempty"`
}

// v1Result is SendMessageResponse / StreamResponse: exactly one field set.
type v1Result struct {
	Task           *v1Task           `json:"task,omitempty"`
	Message        *v1Message        `json:"message,omitempty"`
	StatusUpdate   *v1StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *v1ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// ---- 0.3 wire form ----

type v03File struct {
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type v03Part struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *v03File        `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

type v03Message struct {
	Kind             string         `json:"kind"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []v03Part      `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type v03Status struct {
	State     string      `json:"state"`
	Message   *v03Message `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

type v03Artifact struct {
	ArtifactID string    `json:"artifactId"`
	Name       string    `json:"name,omitempty"`
	Parts      []v03Part `json:"parts"`
}

type v03Task struct {
	Kind      string        `json:"kind"`
	ID        string        `json:"id"`
	ContextID string        `json:"contextId"`
	Status    v03Status     `json:"status"`
	Artifacts []v03Artifact `json:"artifacts,omitempty"`
	History   []v03Message  `json:"history,omitempty"`
}

type v03StatusUpdate struct {
	Kind      string    `json:"kind"`
	TaskID    string    `json:"taskId"`
	ContextID string    `json:"contextId"`
	Status    v03Status `json:"status"`
	Final     bool      `json:"final"`
}

type v03ArtifactUpdate struct {
	Kind      string      `json:"kind"`
	TaskID    string      `json:"taskId"`
	ContextID string      `json:"contextId"`
	Artifact  v03Artifact `json:"artifact"`
	Append    bool        `json:"append,omitempty"`
	LastChunk bool        `json:"lastChunk,omitempty"`
}

// ---- encoding ----

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func v1State(s string) string {
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

func v1Role(r string) string {
	if r == RoleAgent {
		return "ROLE_AGENT"
	}
	return "ROLE_USER"
}

func encV1Parts(ps []Part) []v1Part {
	out := make([]v1Part, 0, len(ps))
	for _, p := range ps {
		w := v1Part{MediaType: p.MediaType, Filename: p.Filename, Metadata: p.Metadata}
		switch p.Kind {
		case "raw":
			s := base64.StdEncoding.EncodeToString(p.Raw)
			w.Raw = &s
		case "url":
			u := p.URL
			w.URL = &u
		case "data":
			w.Data = p.Data
		default:
			t := p.Text
			w.Text = &t
		}
		out = append(out, w)
	}
	return out
}

func encV1Message(m *Message) *v1Message {
	if m == nil {
		return nil
	}
	return &v1Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: m.TaskID, Role: v1Role(m.Role),
		Parts: encV1Parts(m.Parts), Metadata: m.Metadata}
}

func encV1Status(s Status) v1Status {
	return v1Status{State: v1State(s.State), Message: encV1Message(s.Message), Timestamp: stamp(s.Timestamp)}
}

func encV1Artifact(a Artifact) v1Artifact {
	return v1Artifact{ArtifactID: a.ID, Name: a.Name, Parts: encV1Parts(a.Parts)}
}

func encV1Task(t *Task) *v1Task {
	w := &v1Task{ID: t.ID, ContextID: t.ContextID, Status: encV1Status(t.Status)}
	for _, a := range t.Artifacts {
		w.Artifacts = append(w.Artifacts, encV1Artifact(a))
	}
	for i := range t.History {
		w.History = append(w.History, *encV1Message(&t.History[i]))
	}
	return w
}

func encV03Parts(ps []Part) []v03Part {
	out := make([]v03Part, 0, len(ps))
	for _, p := range ps {
		w := v03Part{Metadata: p.Metadata}
		switch p.Kind {
		case "raw":
			w.Kind = "file"
			w.File = &v03File{Bytes: base64.StdEncoding.EncodeToString(p.Raw), MimeType: p.MediaType, Name: p.Filename}
		case "url":
			w.Kind = "file"
			w.File = &v03File{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
		case "data":
			w.Kind = "data"
			w.Data = p.Data
		default:
			w.Kind = "text"
			t := p.Text
			w.Text = &t
		}
		out = append(out, w)
	}
	return out
}

func encV03Message(m *Message) *v03Message {
	if m == nil {
		return nil
	}
	return &v03Message{Kind: "message", MessageID: m.ID, ContextID: m.ContextID, TaskID: m.TaskID, Role: m.Role,
		Parts: encV03Parts(m.Parts), Metadata: m.Metadata}
}

func encV03Status(s Status) v03Status {
	return v03Status{State: s.State, Message: encV03Message(s.Message), Timestamp: stamp(s.Timestamp)}
}

func encV03Artifact(a Artifact) v03Artifact {
	return v03Artifact{ArtifactID: a.ID, Name: a.Name, Parts: encV03Parts(a.Parts)}
}

func encV03Task(t *Task) *v03Task {
	w := &v03Task{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: encV03Status(t.Status)}
	for _, a := range t.Artifacts {
		w.Artifacts = append(w.Artifacts, encV03Artifact(a))
	}
	for i := range t.History {
		w.History = append(w.History, *encV03Message(&t.History[i]))
	}
	return w
}

// encodeTask is the result of GetTask / CancelTask: a bare Task in both versions.
func encodeTask(v Version, t *Task) any {
	if v == V03 {
		return encV03Task(t)
	}
	return encV1Task(t)
}

// encodeEvent is one result of SendMessage or one streamed event: wrapped by
// type in v1.0, a kind-tagged object in 0.3.
func encodeEvent(v Version, ev Event) any {
	switch e := ev.(type) {
	case *Task:
		if v == V03 {
			return encV03Task(e)
		}
		return v1Result{Task: encV1Task(e)}
	case *Message:
		if v == V03 {
			return encV03Message(e)
		}
		return v1Result{Message: encV1Message(e)}
	case *StatusUpdate:
		if v == V03 {
			return v03StatusUpdate{Kind: "status-update", TaskID: e.TaskID, ContextID: e.ContextID, Status: encV03Status(e.Status), Final: e.Final}
		}
		return v1Result{StatusUpdate: &v1StatusUpdate{TaskID: e.TaskID, ContextID: e.ContextID, Status: encV1Status(e.Status)}}
	case *ArtifactUpdate:
		if v == V03 {
			return v03ArtifactUpdate{Kind: "artifact-update", TaskID: e.TaskID, ContextID: e.ContextID,
				Artifact: encV03Artifact(e.Artifact), Append: e.Append, LastChunk: e.LastChunk}
		}
		return v1Result{ArtifactUpdate: &v1ArtifactUpdate{TaskID: e.TaskID, ContextID: e.ContextID,
			Artifact: encV1Artifact(e.Artifact), Append: e.Append, LastChunk: e.LastChunk}}
	}
	panic(fmt.Sprintf("a2a: unknown event %T", ev))
}

// ---- decoding (requests on the server, results on the client) ----

func decState(s string) string {
	if rest, ok := strings.CutPrefix(s, "TASK_STATE_"); ok {
		return strings.ReplaceAll(strings.ToLower(rest), "_", "-")
	}
	switch s {
	case StateSubmitted, StateWorking, StateInputRequired, StateCompleted, StateCanceled, StateFailed,
		StateRejected, StateAuthRequired:
		return s
	case "cancelled":
		return StateCanceled
	}
	return StateUnknown
}

func decRole(r string) (string, error) {
	switch r {
	case "ROLE_USER", "user":
		return RoleUser, nil
	case "ROLE_AGENT", "agent":
		return RoleAgent, nil
	}
	return "", fmt.Errorf("unknown role %q", r)
}

func decTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func decV1Parts(ws []v1Part) ([]Part, error) {
	out := make([]Part, 0, len(ws))
	for i, w := range ws {
		p := Part{MediaType: w.MediaType, Filename: w.Filename, Metadata: w.Metadata}
		n := 0
		if w.Text != nil {
			p.Kind, p.Text = "text", *w.Text
			n++
		}
		if w.Raw != nil {
			b, err := base64.StdEncoding.DecodeString(*w.Raw)
			if err != nil {
				return nil, fmt.Errorf("part %d: raw is not valid base64", i)
			}
			p.Kind, p.Raw = "raw", b
			n++
		}
		if w.URL != nil && *w.URL != "" {
			p.Kind, p.URL = "url", *w.URL
			n++
		}
		if len(w.Data) > 0 && string(w.Data) != "null" {
			p.Kind, p.Data = "data", w.Data
			n++
		}
		if n != 1 {
			return nil, fmt.Errorf("part %d: want exactly one of text, raw, url or data", i)
		}
		out = append(out, p)
	}
	return out, nil
}

func decV03Parts(ws []v03Part) ([]Part, error) {
	out := make([]Part, 0, len(ws))
	for i, w := range ws {
		p := Part{Metadata: w.Metadata}
		switch w.Kind {
		case "text":
			if w.Text == nil {
				return nil, fmt.Errorf("part %d: text part without text", i)
			}
			p.Kind, p.Text = "text", *w.Text
		case "file":
			if w.File == nil {
				return nil, fmt.Errorf("part %d: file part without file", i)
			}
			p.MediaType, p.Filename = w.File.MimeType, w.File.Name
			switch {
			case w.File.Bytes != "" && w.File.URI == "":
				b, err := base64.StdEncoding.DecodeString(w.File.Bytes)
				if err != nil {
					return nil, fmt.Errorf("part %d: file bytes are not valid base64", i)
				}
				p.Kind, p.Raw = "raw", b
			case w.File.URI != "" && w.File.Bytes == "":
				p.Kind, p.URL = "url", w.File.URI
			default:
				return nil, fmt.Errorf("part %d: file needs exactly one of bytes or uri", i)
			}
		case "data":
			if len(w.Data) == 0 || w.Data[0] != '{' {
				return nil, fmt.Errorf("part %d: data must be a JSON object", i)
			}
			p.Kind, p.Data = "data", w.Data
		default:
			return nil, fmt.Errorf("part %d: unknown part kind %q", i, w.Kind)
		}
		out = append(out, p)
	}
	return out, nil
}

func decV1Message(w *v1Message) (*Message, error) {
	if w == nil {
		return nil, nil
	}
	role, err := decRole(w.Role)
	if err != nil {
		return nil, err
	}
	parts, err := decV1Parts(w.Parts)
	if err != nil {
		return nil, err
	}
	return &Message{ID: w.MessageID, ContextID: w.ContextID, TaskID: w.TaskID, Role: role, Parts: parts, Metadata: w.Metadata}, nil
}

func decV03Message(w *v03Message) (*Message, error) {
	if w == nil {
		return nil, nil
	}
	if w.Kind != "" && w.Kind != "message" {
		return nil, fmt.Errorf("message kind is %q, want message", w.Kind)
	}
	role, err := decRole(w.Role)
	if err != nil {
		return nil, err
	}
	parts, err := decV03Parts(w.Parts)
	if err != nil {
		return nil, err
	}
	return &Message{ID: w.MessageID, ContextID: w.ContextID, TaskID: w.TaskID, Role: role, Parts: parts, Metadata: w.Metadata}, nil
}

func decV1Status(w v1Status) (Status, error) {
	m, err := decV1Message(w.Message)
	return Status{State: decState(w.State), Message: m, Timestamp: decTime(w.Timestamp)}, err
}

func decV03Status(w v03Status) (Status, error) {
	m, err := decV03Message(w.Message)
	return Status{State: decState(w.State), Message: m, Timestamp: decTime(w.Timestamp)}, err
}

func decV1Task(w *v1Task) (*Task, error) {
	st, err := decV1Status(w.Status)
	if err != nil {
		return nil, err
	}
	t := &Task{ID: w.ID, ContextID: w.ContextID, Status: st}
	for _, a := range w.Artifacts {
		ps, err := decV1Parts(a.Parts)
		if err != nil {
			return nil, err
		}
		t.Artifacts = append(t.Artifacts, Artifact{ID: a.ArtifactID, Name: a.Name, Parts: ps})
	}
	return t, nil
}

func decV03Task(w *v03Task) (*Task, error) {
	st, err := decV03Status(w.Status)
	if err != nil {
		return nil, err
	}
	t := &Task{ID: w.ID, ContextID: w.ContextID, Status: st}
	for _, a := range w.Artifacts {
		ps, err := decV03Parts(a.Parts)
		if err != nil {
			return nil, err
		}
		t.Artifacts = append(t.Artifacts, Artifact{ID: a.ArtifactID, Name: a.Name, Parts: ps})
	}
	return t, nil
}

// decodeEvent reads one SendMessage result or streamed event.
func decodeEvent(v Version, raw json.RawMessage) (Event, error) {
	if v == V1 {
		var r v1Result
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		switch {
		case r.Task != nil:
			return decV1Task(r.Task)
		case r.Message != nil:
			return decV1Message(r.Message)
		case r.StatusUpdate != nil:
			st, err := decV1Status(r.StatusUpdate.Status)
			if err != nil {
				return nil, err
			}
			return &StatusUpdate{TaskID: r.StatusUpdate.TaskID, ContextID: r.StatusUpdate.ContextID, Status: st, Final: Terminal(st.State)}, nil
		case r.ArtifactUpdate != nil:
			ps, err := decV1Parts(r.ArtifactUpdate.Artifact.Parts)
			if err != nil {
				return nil, err
			}
			a := r.ArtifactUpdate
			return &ArtifactUpdate{TaskID: a.TaskID, ContextID: a.ContextID, Append: a.Append, LastChunk: a.LastChunk,
				Artifact: Artifact{ID: a.Artifact.ArtifactID, Name: a.Artifact.Name, Parts: ps}}, nil
		}
		return nil, fmt.Errorf("result has none of task, message, statusUpdate, artifactUpdate")
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Kind {
	case "task":
		var w v03Task
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		return decV03Task(&w)
	case "message":
		var w v03Message
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		return decV03Message(&w)
	case "status-update":
		var w v03StatusUpdate
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		st, err := decV03Status(w.Status)
		if err != nil {
			return nil, err
		}
		return &StatusUpdate{TaskID: w.TaskID, ContextID: w.ContextID, Status: st, Final: w.Final || Terminal(st.State)}, nil
	case "artifact-update":
		var w v03ArtifactUpdate
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		ps, err := decV03Parts(w.Artifact.Parts)
		if err != nil {
			return nil, err
		}
		return &ArtifactUpdate{TaskID: w.TaskID, ContextID: w.ContextID, Append: w.Append, LastChunk: w.LastChunk,
			Artifact: Artifact{ID: w.Artifact.ArtifactID, Name: w.Artifact.Name, Parts: ps}}, nil
	}
	return nil, fmt.Errorf("unknown result kind %q", head.Kind)
}

// decodeTask reads the result of GetTask / CancelTask.
func decodeTask(v Version, raw json.RawMessage) (*Task, error) {
	if v == V1 {
		var w v1Task
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		return decV1Task(&w)
	}
	var w v03Task
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	return decV03Task(&w)
}
