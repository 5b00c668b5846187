package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentik/agentik"
)

// APIError is an error answer of the endpoint: an HTTP error status, or an
// error object inside a 200 stream (StatusCode 200). It wraps
// agentik.ErrContextOverflow when the message says the context was too long,
// and the *openai.Error of openai-go for HTTP errors.
type APIError struct {
	StatusCode int
	Type       string
	Code       string
	Message    string
	overflow   bool
	err        error
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.StatusCode == http.StatusOK {
		b.WriteString("model endpoint reported an error inside the stream")
	} else {
		fmt.Fprintf(&b, "model endpoint answered HTTP %d", e.StatusCode)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	} else if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

func (e *APIError) Unwrap() []error {
	var errs []error
	if e.err != nil {
		errs = append(errs, e.err)
	}
	if e.overflow {
		errs = append(errs, agentik.ErrContextOverflow)
	}
	return errs
}

func newAPIError(status int, typ, code, msg string, err error) *APIError {
	const max = 2000 // bodies can be whole HTML pages
	if len(msg) > max {
		msg = msg[:max] + "…"
	}
	e := &APIError{StatusCode: status, Type: typ, Code: code, Message: msg, err: err}
	e.overflow = status != http.StatusTooManyRequests && isContextOverflow(code, msg)
	return e
}

func fromSDKError(e *oai.Error) *APIError {
	return newAPIError(e.StatusCode, e.Type, e.Code, e.Message, e)
}

// streamError turns the "error" member of an in-stream chunk into an error.
func streamError(raw json.RawMessage) *APIError {
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Message == "" {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			obj.Message = s
		} else if obj.Message == "" {
			obj.Message = string(raw)
		}
	}
	return newAPIError(http.StatusOK, obj.Type, codeString(obj.Code), obj.Message, nil)
}

// codeString reads an error code that is a string (OpenAI) or a number (vLLM).
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) > 0 && raw[0] >= '0' && raw[0] <= '9' {
		return string(raw)
	}
	return ""
}

// isContextOverflow classifies by code and message text, because every
// server says it differently: OpenAI's code, vLLM's and DeepSeek's "maximum
// context length", llama.cpp's "exceeds the available context size",
// Anthropic-style "prompt is too long", LM Studio's "context length … exceeded".
func isContextOverflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "context_length_exceeded"),
		strings.Contains(m, "maximum context length"),
		strings.Contains(m, "prompt is too long"),
		strings.Contains(m, "context window") && (strings.Contains(m, "exceed") || strings.Contains(m, "too long")),
		strings.Contains(m, "exceed") && strings.Contains(m, "context"):
		return true
	}
	return false
}

// errorMiddleware normalises error responses before openai-go sees them:
//   - 429 insufficient_quota gets "x-should-retry: false", which openai-go
//     honours, so a quota error is not retried like a rate limit;
//   - bodies that are not {"error":{…}} (vLLM's top-level {"object":"error",
//     "message":…}, {"error":"text"}, plain text or HTML) are rewritten into
//     that shape so the status, message and code always reach *openai.Error.
func errorMiddleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	body, rerr := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	if rerr != nil {
		body = nil
	}
	body = normaliseErrorBody(body, res.StatusCode)
	if res.StatusCode == http.StatusTooManyRequests && bytes.Contains(body, []byte("insufficient_quota")) {
		res.Header.Set("X-Should-Retry", "false")
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Type", "application/json")
	return res, nil
}

func normaliseErrorBody(body []byte, status int) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if e, ok := top["error"]; ok {
			var obj map[string]json.RawMessage
			if json.Unmarshal(e, &obj) == nil {
				if c, ok := obj["code"]; ok && len(c) > 0 && c[0] != '"' && c[0] != 'n' {
					obj["code"], _ = json.Marshal(codeString(c)) // numeric code → string
					out, _ := json.Marshal(map[string]any{"error": obj})
					return out
				}
				return body
			}
			var s string
			if json.Unmarshal(e, &s) == nil {
				out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": s}})
				return out
			}
		}
		if m, ok := top["message"]; ok {
			var s string
			_ = json.Unmarshal(m, &s)
			var typ string
			_ = json.Unmarshal(top["type"], &typ)
			out, _ := json.Marshal(map[string]any{"error": map[string]any{
				"message": s, "type": typ, "code": codeString(top["code"]),
			}})
			return out
		}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = http.StatusText(status)
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg}})
	return out
}

// redacted hides the API key should any error text ever contain it (a
// server echoing the Authorization header, a URL with the key in it).
type redacted struct {
	err error
	key string
}

func (r *redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.key, "[redacted]") }
func (r *redacted) Unwrap() error { return r.err }

func redact(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return &redacted{err: err, key: key}
}

var errIdle = errors.New("idle timeout")
