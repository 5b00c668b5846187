package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/jsonpatch"
)

// The request decoders below are pure functions of the request's bytes so that
// they can be fuzzed. Each returns an *agentik.Error whose code says what is
// wrong (malformed, invalid, too_large, unsupported_media_type); none of them
// lets a request through that the core would have to refuse for its shape.

// readBody reads the bounded JSON body (edge.ReadJSON): an empty body is
// nil, a non-empty one must be JSON.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return edge.ReadJSON(w, r, limit)
}

// decodeJSON decodes exactly one JSON value into v. Unknown fields are ignored
// (SPEC §2); anything after the value is refused, because a body such as
// `{"a":1}{"b":2}` is not what its sender thinks it is.
func decodeJSON(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return agentik.Errorf(agentik.EMalformed, "request body is required")
	}
	if err := agentik.CheckJSON(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if typeErr.Field == "" {
				return agentik.Errorf(agentik.EInvalid, "request body must be a JSON object")
			}
			return agentik.Errorf(agentik.EInvalid, "field %s: must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return agentik.WrapError(agentik.EMalformed, "request body is not valid JSON", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return agentik.Errorf(agentik.EMalformed, "request body has data after the JSON value")
	}
	return nil
}

// jsonKind names a Go kind the way a JSON user would.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	default:
		return "a number"
	}
}

// decodeCreate decodes a create body; no body means defaults.
func decodeCreate(b []byte) (agentik.CreateRequest, error) {
	var req agentik.CreateRequest
	if len(bytes.TrimSpace(b)) == 0 {
		return req, nil
	}
	err := decodeJSON(b, &req)
	return req, err
}

// decodeSend decodes and validates a send body: known busy policy, non-empty
// valid content.
func decodeSend(b []byte) (agentik.SendRequest, error) {
	var req agentik.SendRequest
	if err := decodeJSON(b, &req); err != nil {
		return req, err
	}
	if !agentik.ValidBusyPolicy(req.IfBusy) {
		return req, agentik.Errorf(agentik.EInvalid, "if_busy must be one of enqueue, interrupt, reject")
	}
	if err := agentik.ValidateContent(req.Content); err != nil {
		return req, err
	}
	if err := clientContext(req.Context); err != nil {
		return req, err
	}
	if req.Parent != nil && *req.Parent < 0 {
		return req, agentik.Errorf(agentik.EInvalid, "parent must be a message's seq, or 0 for the root")
	}
	return req, nil
}

// decodeRegenerate decodes a regenerate body; no body answers the head
// path's last user message again.
func decodeRegenerate(b []byte) (agentik.RegenerateRequest, error) {
	var req agentik.RegenerateRequest
	if len(bytes.TrimSpace(b)) == 0 {
		return req, nil
	}
	if err := decodeJSON(b, &req); err != nil {
		return req, err
	}
	if !agentik.ValidBusyPolicy(req.IfBusy) {
		return req, agentik.Errorf(agentik.EInvalid, "if_busy must be one of enqueue, interrupt, reject")
	}
	if req.Seq < 0 {
		return req, agentik.Errorf(agentik.EInvalid, "seq must be a message's seq")
	}
	return req, nil
}

// decodeHead decodes a head body: seq is required.
func decodeHead(b []byte) (int64, error) {
	var req struct {
		Seq *int64 `json:"seq"`
	}
	if err := decodeJSON(b, &req); err != nil {
		return 0, err
	}
	if req.Seq == nil || *req.Seq <= 0 {
		return 0, agentik.Errorf(agentik.EInvalid, "seq is required: the seq of a message of the conversation")
	}
	return *req.Seq, nil
}

// decodeFork decodes a fork body; no body forks at the head.
func decodeFork(b []byte) (agentik.ForkRequest, error) {
	var req agentik.ForkRequest
	if len(bytes.TrimSpace(b)) == 0 {
		return req, nil
	}
	if err := decodeJSON(b, &req); err != nil {
		return req, err
	}
	if req.Seq < 0 {
		return req, agentik.Errorf(agentik.EInvalid, "seq must be a message's seq")
	}
	return req, nil
}

// facadeChannels are the origin channels the other front doors set on the
// messages they store, and facadeMetadata the prefixes of the metadata keys
// they set there (the IRC mask a line is shown from, the A2A and AG-UI
// message ids they reconcile by). They are the front doors' alone: a
// native API client that could write them would make its message look
// like another client's line on IRC, or like a message an AG-UI or A2A
// client sent.
var (
	facadeChannels = []string{"irc", "a2a", "agui", "websocket", "mcp", "schedule"}
	facadeMetadata = []string{"irc_", "a2a_", "agui_"}
)

// clientContext refuses a message context that claims what only another
// front door sets.
func clientContext(c *agentik.MessageContext) error {
	if c == nil {
		return nil
	}
	if c.Origin != nil && slices.Contains(facadeChannels, c.Origin.Channel) {
		return agentik.Errorf(agentik.EInvalid, "context.origin.channel %q is set by that front door only", c.Origin.Channel)
	}
	for k := range c.Metadata {
		for _, p := range facadeMetadata {
			if strings.HasPrefix(k, p) {
				return agentik.Errorf(agentik.EInvalid, "context.metadata key %q is set by a front door only (keys starting %q are reserved)", truncate(k, 64), p)
			}
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// decodeRename decodes a rename body. The title is required; "" clears it.
func decodeRename(b []byte) (string, error) {
	var req struct {
		Title *string `json:"title"`
	}
	if err := decodeJSON(b, &req); err != nil {
		return "", err
	}
	if req.Title == nil {
		return "", agentik.Errorf(agentik.EInvalid, "title is required")
	}
	return *req.Title, nil
}

// parseListQuery reads ?limit&before of the conversation list.
func parseListQuery(q url.Values) (agentik.ListRequest, error) {
	limit, err := parseLimit(q)
	if err != nil {
		return agentik.ListRequest{}, err
	}
	req := agentik.ListRequest{Limit: limit, Before: q.Get("before")}
	if req.Before != "" {
		if _, _, err := agentik.ParseListToken(req.Before); err != nil {
			return agentik.ListRequest{}, agentik.Errorf(agentik.EInvalid, "before is not a page token from this server")
		}
	}
	return req, nil
}

// parseMessagesQuery reads ?after&before&offset&limit of the journal.
func parseMessagesQuery(q url.Values) (agentik.MessagesRequest, error) {
	var req agentik.MessagesRequest
	var err error
	if req.After, err = parseNonNegative(q, "after"); err != nil {
		return req, err
	}
	if req.Before, err = parseNonNegative(q, "before"); err != nil {
		return req, err
	}
	offset, err := parseNonNegative(q, "offset")
	if err != nil {
		return req, err
	}
	if offset > 1<<31-1 {
		return req, agentik.Errorf(agentik.EInvalid, "offset is too large")
	}
	req.Offset = int(offset)
	switch b := q.Get("branch"); b {
	case "", agentik.BranchHead, agentik.BranchAll:
		req.Branch = b
	default:
		return req, agentik.Errorf(agentik.EInvalid, "branch must be %q or %q", agentik.BranchHead, agentik.BranchAll)
	}
	req.Limit, err = parseLimit(q)
	return req, err
}

// parseLimit reads ?limit: absent is the default, above the maximum is
// clamped, anything but a positive integer is invalid.
func parseLimit(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return agentik.DefaultMessagesLimit, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, agentik.Errorf(agentik.EInvalid, "limit must be a positive integer")
	}
	return int(min(n, agentik.MaxMessagesLimit)), nil
}

// parseNonNegative reads an optional non-negative integer parameter (0 when
// absent).
func parseNonNegative(q url.Values, name string) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, agentik.Errorf(agentik.EInvalid, "%s must be a non-negative integer", name)
	}
	return n, nil
}

// parseCursor gives the cursor an event stream starts after: Last-Event-ID
// when present (it is where the client really is, see the package doc), else
// ?after=, else agentik.LiveOnly.
func parseCursor(lastEventID string, q url.Values) (int64, error) {
	name, s := "Last-Event-ID", strings.TrimSpace(lastEventID)
	if s == "" {
		name, s = "after", q.Get("after")
	}
	if s == "" {
		return agentik.LiveOnly, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, agentik.Errorf(agentik.EInvalid, "%s must be a non-negative integer cursor", name)
	}
	return n, nil
}

// errBadID is the answer to a path id that cannot be one of ours.
func errBadID(id string) error {
	return agentik.WrapError(agentik.ENotFound, "conversation not found", fmt.Errorf("malformed id %q", id))
}

// decodeState decodes a shared-state body (PUT …/state): a JSON object.
func decodeState(b []byte) (agentik.RawJSON, error) {
	var m map[string]json.RawMessage
	if err := decodeJSON(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, agentik.Errorf(agentik.EInvalid, "the state must be a JSON object")
	}
	return agentik.RawJSON(bytes.TrimSpace(b)), nil
}

// decodeStatePatch decodes a JSON Patch body (PATCH …/state, RFC 6902):
// an array of operations. Whether it applies is the state's to say.
func decodeStatePatch(b []byte) (agentik.RawJSON, error) {
	var ops []json.RawMessage
	if err := decodeJSON(b, &ops); err != nil {
		return nil, err
	}
	if _, err := jsonpatch.Decode(b); err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "%v", err)
	}
	return agentik.RawJSON(bytes.TrimSpace(b)), nil
}
