package openaiapi

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/agentik/agentik/internal/jsonw"
)

// The events of a streamed response are written by hand: the same bytes
// as json.Marshal (map keys sorted, struct fields in order, <, > and &
// escaped), without its reflection, key sorting allocations and one
// buffer per event — a streamed turn has one event per delta.

// appendJSON appends v as json.Marshal writes it, for the values the
// events of a response hold; false for any other value (the caller
// marshals it then).
func appendJSON(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return jsonw.AppendString(b, v, true), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case float64:
		return appendFloat(b, v)
	case []any:
		return appendArray(b, v, appendJSON)
	case map[string]any:
		return appendMap(b, v)
	case []item:
		return appendItems(b, v)
	case map[string]string:
		return appendStrings(b, v), true
	case *response:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendResponse(b, v)
	}
	return b, false
}

// appendFloat writes f as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// sortedKeys returns m's keys in order, in keys (a small map needs no
// allocation).
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMap(b []byte, m map[string]any) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var arr [16]string
	b = append(b, '{')
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k, true), ':')
		var ok bool
		if b, ok = appendJSON(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendItems(b []byte, items []item) ([]byte, bool) {
	return appendArray(b, items, func(b []byte, it item) ([]byte, bool) { return appendMap(b, it) })
}

// appendArray appends xs as a JSON array, each element by appendElem
// (null for a nil slice, as json.Marshal writes it).
func appendArray[T any](b []byte, xs []T, appendElem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if xs == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendElem(b, x); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendStrings(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var arr [16]string
	b = append(b, '{')
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k, true), ':')
		b = jsonw.AppendString(b, m[k], true)
	}
	return append(b, '}')
}

func appendCounts(b []byte, m map[string]int64) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var arr [16]string
	b = append(b, '{')
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k, true), ':')
		b = strconv.AppendInt(b, m[k], 10)
	}
	return append(b, '}')
}

// appendKey appends ,"key": (the comma unless first).
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendStrPtr appends s, or null for nil.
func appendStrPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonw.AppendString(b, *s, true)
}

// appendResponse appends r with its fields in the struct's order.
func appendResponse(b []byte, r *response) ([]byte, bool) {
	var ok bool
	b = jsonw.AppendString(append(b, `{"id":`...), r.ID, true)
	b = jsonw.AppendString(appendKey(b, "object", false), r.Object, true)
	b = strconv.AppendInt(appendKey(b, "created_at", false), r.CreatedAt, 10)
	b = jsonw.AppendString(appendKey(b, "status", false), r.Status, true)
	b = jsonw.AppendString(appendKey(b, "model", false), r.Model, true)
	if b, ok = appendItems(appendKey(b, "output", false), r.Output); !ok {
		return b, false
	}
	b = appendKey(b, "usage", false)
	if u := r.Usage; u == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(appendKey(append(b, '{'), "input_tokens", true), u.InputTokens, 10)
		b = strconv.AppendInt(appendKey(b, "output_tokens", false), u.OutputTokens, 10)
		b = strconv.AppendInt(appendKey(b, "total_tokens", false), u.TotalTokens, 10)
		b = appendCounts(appendKey(b, "input_tokens_details", false), u.InputTokensDetails)
		b = append(appendCounts(appendKey(b, "output_tokens_details", false), u.OutputTokensDetails), '}')
	}
	b = appendKey(b, "error", false)
	if e := r.Error; e == nil {
		b = append(b, "null"...)
	} else {
		b = jsonw.AppendString(appendKey(append(b, '{'), "code", true), e.Code, true)
		b = append(jsonw.AppendString(appendKey(b, "message", false), e.Message, true), '}')
	}
	b = appendKey(b, "incomplete_details", false)
	if d := r.IncompleteDetails; d == nil {
		b = append(b, "null"...)
	} else {
		b = append(jsonw.AppendString(appendKey(append(b, '{'), "reason", true), d.Reason, true), '}')
	}
	b = appendStrPtr(appendKey(b, "previous_response_id", false), r.PreviousResponseID)
	b = appendKey(b, "conversation", false)
	if c := r.Conversation; c == nil {
		b = append(b, "null"...)
	} else {
		b = append(jsonw.AppendString(append(b, `{"id":`...), c.ID, true), '}')
	}
	b = appendStrPtr(appendKey(b, "instructions", false), r.Instructions)
	b = appendStrings(appendKey(b, "metadata", false), r.Metadata)
	b = appendKey(b, "tools", false)
	switch {
	case r.Tools == nil:
		b = append(b, "null"...)
	case len(r.Tools) == 0:
		b = append(b, "[]"...)
	default:
		t, err := json.Marshal(r.Tools)
		if err != nil {
			return b, false
		}
		b = append(b, t...)
	}
	b = jsonw.AppendString(appendKey(b, "tool_choice", false), r.ToolChoice, true)
	b = strconv.AppendBool(appendKey(b, "parallel_tool_calls", false), r.ParallelToolCalls)
	b = strconv.AppendBool(appendKey(b, "background", false), r.Background)
	b = strconv.AppendBool(appendKey(b, "store", false), r.Store)
	if b, ok = appendMap(appendKey(b, "text", false), r.Text); !ok {
		return b, false
	}
	if b, ok = appendFloat(appendKey(b, "temperature", false), r.Temperature); !ok {
		return b, false
	}
	if b, ok = appendFloat(appendKey(b, "top_p", false), r.TopP); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendDelta appends a text delta event (reasoning: a reasoning summary
// delta) as json.Marshal writes its map.
func appendDelta(b []byte, reasoning bool, itemID string, index int, delta string, seq int64) []byte {
	if reasoning {
		b = jsonw.AppendString(append(b, `{"delta":`...), delta, true)
		b = jsonw.AppendString(append(b, `,"item_id":`...), itemID, true)
		b = strconv.AppendInt(append(b, `,"output_index":`...), int64(index), 10)
		b = strconv.AppendInt(append(b, `,"sequence_number":`...), seq, 10)
		return append(b, `,"summary_index":0,"type":"`+reasoningDelta+`"}`...)
	}
	b = jsonw.AppendString(append(b, `{"content_index":0,"delta":`...), delta, true)
	b = jsonw.AppendString(append(b, `,"item_id":`...), itemID, true)
	b = strconv.AppendInt(append(b, `,"logprobs":[],"output_index":`...), int64(index), 10)
	b = strconv.AppendInt(append(b, `,"sequence_number":`...), seq, 10)
	return append(b, `,"type":"`+textDelta+`"}`...)
}
