package agentik

import (
	"errors"
	"fmt"
	"time"
)

// Error codes: the one error vocabulary of the core. Each transport maps a
// code to its own status in exactly one function.
const (
	EMalformed      = "malformed"              // input cannot be decoded (HTTP 400)
	EInvalid        = "invalid"                // decoded input with invalid values (422)
	EUnauthorized   = "unauthorized"           // no or bad credentials (401)
	ENotFound       = "not_found"              // unknown, deleted or not the caller's (404)
	EBusy           = "busy"                   // a turn is running and the policy is reject (409)
	EConflict       = "conflict"               // state conflict other than busy (409)
	ETooLarge       = "too_large"              // body or content over a limit (413)
	EUnsupportedMed = "unsupported_media_type" // body is not JSON (415)
	ERateLimited    = "rate_limited"           // too many requests (429)
	EUnavailable    = "unavailable"            // store or dependency down, shutting down (503)
	EInternal       = "internal"               // anything else (500)
)

// Error is an error with a code from the vocabulary above and a message that
// is safe to show to a user. The wrapped Err carries the detail for logs.
type Error struct {
	Code    string
	Message string
	Err     error
	// RetryAfter, when set on an ERateLimited error, says when to retry.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted user message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the given code and message wrapping err.
func WrapError(code, message string, err error) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the user-safe message of err: the message of the first
// *Error in its chain, or a generic text that leaks nothing.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// IsNotFound reports whether err has code ENotFound.
func IsNotFound(err error) bool { return ErrorCode(err) == ENotFound }

// RetryAfter returns how long the caller of a rate-limited request should
// wait (0 when err says nothing about it).
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
