package edge

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentik/agentik"
)

// DefaultBodyTimeout bounds how long reading one request body may take when
// the edge says nothing else (Options.BodyTimeout).
const DefaultBodyTimeout = 60 * time.Second

type bodyTimeoutKey struct{}

// withBodyTimeout makes ReadBody under ctx take at most d.
func withBodyTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, bodyTimeoutKey{}, d)
}

func bodyTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(bodyTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultBodyTimeout
}

// ReadBody reads r's body, at most limit bytes and within the body timeout
// of the edge the request came through. An empty body reads as nil. Errors
// are the core's: too_large (413) beyond limit, request_timeout (408) when
// the body does not arrive in time, malformed (400) when it cannot be read.
// After a refusal the connection is closed rather than read to its end.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, agentik.Errorf(agentik.ETooLarge, "request body is larger than %d bytes", limit)
	}
	// The deadline is the connection's: it is set for the body only and
	// lifted after, so that the response (an event stream, say) and the next
	// request on the connection are not bound by it.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(bodyTimeout(r.Context()))) == nil
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err) {
		err = os.ErrDeadlineExceeded
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			err = agentik.Errorf(agentik.ETooLarge, "request body is larger than %d bytes", limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			err = agentik.Errorf(CodeRequestTimeout, "the request body did not arrive within %s", bodyTimeout(r.Context()))
		default:
			err = agentik.WrapError(agentik.EMalformed, "cannot read request body", err)
		}
		// What is left of the body must not be taken for the next request.
		w.Header().Set("Connection", "close")
		return nil, err
	}
	if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	return b, nil
}

// ReadJSON is ReadBody for endpoints that take JSON: a non-empty body must
// be application/json or application/*+json (415 otherwise), checked before
// anything is read.
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	if err := CheckJSONType(r.Header.Get("Content-Type")); err != nil {
		w.Header().Set("Connection", "close")
		return nil, err
	}
	return ReadBody(w, r, limit)
}

// CheckJSONType accepts application/json and the application/*+json family.
func CheckJSONType(ct string) error {
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	if len(ct) > 100 {
		ct = ct[:100] + "…"
	}
	return agentik.Errorf(agentik.EUnsupportedMed, "request body must be application/json, not %s", ct)
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
