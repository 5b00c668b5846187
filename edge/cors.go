package edge

import "net/http"

// What a cross-origin page may send and read.
const (
	corsMethods = "GET, POST, PATCH, DELETE, OPTIONS"
	corsHeaders = "Authorization, Content-Type, Last-Event-ID, Accept, Mcp-Session-Id, Mcp-Protocol-Version"
	corsExpose  = "Location, Retry-After, WWW-Authenticate, Mcp-Session-Id"
	corsMaxAge  = "600"
)

// cross adds the CORS headers for an allowed Origin and answers its
// preflight itself (true: the request is answered). Requests of other
// origins get no CORS header, so the browser keeps their answers from the
// page; their preflight goes on to the routes (which refuse OPTIONS).
func (e *Edge) cross(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	h := w.Header()
	if len(e.cors) > 0 {
		h.Add("Vary", "Origin")
	}
	if origin == "" || !e.cors[origin] {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", corsHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Expose-Headers", corsExpose)
	return false
}
