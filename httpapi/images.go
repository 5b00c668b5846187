package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/agentik/agentik"
)

// image serves GET {p}/conversations/{id}/messages/{seq}/images/{n}: the
// bytes of the n-th image (from 0) of the journal message with that seq,
// with its MIME type. Facades that cannot carry images themselves (IRC)
// link to it. Same auth as every endpoint: another principal's conversation
// is 404. A message's content never changes, so the answer may be cached
// privately.
func (s *server) image(w http.ResponseWriter, r *http.Request) {
	seq, errSeq := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	n, errN := strconv.Atoi(r.PathValue("n"))
	if errSeq != nil || errN != nil || seq < 1 || n < 0 {
		s.writeError(w, r, agentik.Errorf(agentik.ENotFound, "no such image"))
		return
	}
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	page, err := conv.Messages(r.Context(), agentik.MessagesRequest{After: seq - 1, Limit: 1})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(page.Messages) == 0 || page.Messages[0].Seq != seq {
		s.writeError(w, r, agentik.Errorf(agentik.ENotFound, "no such image"))
		return
	}
	i := 0
	for _, p := range page.Messages[0].Content {
		if p.Type != agentik.ContentImage {
			continue
		}
		if i == n {
			raw, err := base64.StdEncoding.DecodeString(p.Data)
			if err != nil {
				s.writeError(w, r, agentik.WrapError(agentik.EInternal, "stored image is not valid base64", err))
				return
			}
			w.Header().Set("Content-Type", p.MIME)
			w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
			w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Content-Security-Policy", "default-src 'none'")
			w.WriteHeader(http.StatusOK)
			if r.Method != http.MethodHead {
				w.Write(raw)
			}
			return
		}
		i++
	}
	s.writeError(w, r, agentik.Errorf(agentik.ENotFound, "no such image"))
}
