package httpapi

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

func TestWriteErrorHeaders(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := httptest.NewRequest("POST", "/agentik/conversations/x/messages", nil)

	w := httptest.NewRecorder()
	WriteError(w, r, log, &agentik.Error{Code: agentik.ERateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond})
	if w.Code != 429 || w.Header().Get("Retry-After") != "2" || !strings.Contains(w.Body.String(), `"rate_limited"`) {
		t.Fatalf("rate limited: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}

	w = httptest.NewRecorder()
	WriteError(w, r, log, agentik.Errorf(agentik.EUnauthorized, "no token"))
	if w.Code != 401 || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("unauthorized: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}

	w = httptest.NewRecorder()
	WriteError(w, r, log, io.ErrUnexpectedEOF) // not an *agentik.Error: internal, detail hidden
	if w.Code != 500 || strings.Contains(w.Body.String(), "EOF") || w.Header().Get("Retry-After") != "" {
		t.Fatalf("internal: %d %s", w.Code, w.Body)
	}
}
