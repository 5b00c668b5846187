// Package auth maps bearer tokens to principals and limits what each
// principal may do.
//
// Tokens are kept only as SHA-256 digests and compared in constant time
// against every known digest, so neither the comparison's duration nor a
// memory dump reveals a token. No function of this package logs or returns a
// token.
package auth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/agentik/agentik"
)

// Tokens is a reloadable set of principal:token pairs. Safe for concurrent use.
type Tokens struct {
	mu      sync.RWMutex
	entries []entry
	limits  map[string]map[string]bool // principal → the only agents it may use
	// byDigest finds the principal of a watched credential (a token that
	// Lookup already took) without a scan.
	byDigest map[[sha256.Size]byte]string

	// watches are the credentials held by open connections and streams
	// (Watch); a replace that revokes one calls its revoked func.
	wmu     sync.Mutex
	watches map[*watch]struct{}
}

// watch is one Watch: a credential in use and what to do when it stops
// being valid.
type watch struct {
	digest    [sha256.Size]byte
	principal string
	agent     string
	revoked   func()
}

type entry struct {
	digest    [sha256.Size]byte
	principal string
}

// ErrUnauthorized is returned for a missing or unknown token.
var ErrUnauthorized = agentik.Errorf(agentik.EUnauthorized, "a valid bearer token is required")

// ParsePairs reads principal:token pairs separated by commas or newlines.
// Blank entries and lines starting with # are ignored. The error names the
// entry's position, never its text.
func ParsePairs(s string) (map[string]string, error) {
	return parseEntries(strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }))
}

// parseEntries reads one principal:token pair per entry.
func parseEntries(fields []string) (map[string]string, error) {
	pairs := map[string]string{} // token → principal
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		principal, token, ok := strings.Cut(f, ":")
		principal, token = strings.TrimSpace(principal), strings.TrimSpace(token)
		if !ok || principal == "" || token == "" {
			return nil, fmt.Errorf("entry %d: want principal:token", i+1)
		}
		if len(token) < 8 {
			return nil, fmt.Errorf("entry %d (principal %s): token shorter than 8 characters", i+1, principal)
		}
		if _, dup := pairs[token]; dup {
			return nil, fmt.Errorf("entry %d (principal %s): token used twice", i+1, principal)
		}
		pairs[token] = principal
	}
	return pairs, nil
}

// ReadFile reads pairs from a file, one principal:token per line (split on
// newlines only: a comma is part of the token). The error names the line,
// never its text.
func ReadFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return parseEntries(lines)
}

// Merge adds the pairs of more to pairs; a token in both is refused (one
// source silently overriding the other's principal would hand a caller
// another identity). The error names no token.
func Merge(pairs, more map[string]string) error {
	for token, principal := range more {
		if other, dup := pairs[token]; dup {
			return fmt.Errorf("one token is configured twice (for principal %s and for principal %s)", other, principal)
		}
	}
	for token, principal := range more {
		pairs[token] = principal
	}
	return nil
}

// NewTokens returns a set holding pairs (token → principal).
func NewTokens(pairs map[string]string) *Tokens {
	t := &Tokens{}
	t.Replace(pairs)
	return t
}

// Replace swaps the whole set atomically (SIGHUP reload); no principal is
// limited afterwards.
func (t *Tokens) Replace(pairs map[string]string) { t.ReplaceLimited(pairs, nil) }

// ReplaceLimited swaps the whole set and the principals' agent limits
// atomically: a principal in limits may use only the agents listed for it,
// any other principal every agent.
func (t *Tokens) ReplaceLimited(pairs map[string]string, limits map[string][]string) {
	entries := make([]entry, 0, len(pairs))
	byDigest := make(map[[sha256.Size]byte]string, len(pairs))
	for token, principal := range pairs {
		d := sha256.Sum256([]byte(token))
		entries = append(entries, entry{d, principal})
		byDigest[d] = principal
	}
	lim := make(map[string]map[string]bool, len(limits))
	for p, agents := range limits {
		set := make(map[string]bool, len(agents))
		for _, a := range agents {
			set[a] = true
		}
		lim[p] = set
	}
	t.mu.Lock()
	t.entries = entries
	t.byDigest = byDigest
	t.limits = lim
	t.mu.Unlock()
	t.revoke()
}

// Watch registers a credential in use by a connection or stream that
// outlives one request: token, which authenticated principal, used for agent
// ("" for none in particular). When a replace leaves token unknown, gives it
// to another principal, or no longer lets principal use agent, revoked is
// called once, on the replacing goroutine after the new set is in force (it
// must not block: cancel a context, close a connection). A credential that is
// already invalid is revoked at once, before Watch returns. stop releases the
// watch; it reports whether the watch was still held (false: revoked ran or
// will run). Safe for concurrent use.
func (t *Tokens) Watch(token, principal, agent string, revoked func()) (stop func() bool) {
	w := &watch{digest: sha256.Sum256([]byte(token)), principal: principal, agent: agent, revoked: revoked}
	t.wmu.Lock()
	if t.watches == nil {
		t.watches = map[*watch]struct{}{}
	}
	t.watches[w] = struct{}{}
	t.wmu.Unlock()
	// A replace between the caller's Lookup and the registration above has
	// not seen this watch: check it against the set in force now.
	if !t.valid(w) && t.release(w) {
		revoked()
	}
	return func() bool { return t.release(w) }
}

// release removes w, reporting whether it was still registered.
func (t *Tokens) release(w *watch) bool {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	_, held := t.watches[w]
	delete(t.watches, w)
	return held
}

// valid reports whether w's credential still authenticates its principal for
// its agent.
func (t *Tokens) valid(w *watch) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.validLocked(w)
}

// validLocked is valid with t.mu held. Its map lookup is not constant-time,
// which reveals nothing: a watched token is one Lookup already took.
func (t *Tokens) validLocked(w *watch) bool {
	if p, ok := t.byDigest[w.digest]; !ok || p != w.principal {
		return false
	}
	if w.agent == "" {
		return true
	}
	set, limited := t.limits[w.principal]
	return !limited || set[w.agent]
}

// revoke calls revoked for every watch the set in force no longer allows.
func (t *Tokens) revoke() {
	t.wmu.Lock()
	var gone []*watch
	t.mu.RLock()
	for w := range t.watches {
		if !t.validLocked(w) {
			gone = append(gone, w)
		}
	}
	t.mu.RUnlock()
	for _, w := range gone {
		delete(t.watches, w)
	}
	t.wmu.Unlock()
	for _, w := range gone {
		w.revoked()
	}
}

// Watching returns the number of credentials watched (tests, metrics).
func (t *Tokens) Watching() int {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return len(t.watches)
}

// Allows reports whether principal may use agent.
func (t *Tokens) Allows(principal, agent string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	set, limited := t.limits[principal]
	return !limited || set[agent]
}

// Len returns the number of tokens.
func (t *Tokens) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.entries)
}

// Lookup returns the principal of token. It compares the token's digest with
// every known digest without stopping early.
func (t *Tokens) Lookup(token string) (string, bool) {
	if token == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(token))
	t.mu.RLock()
	defer t.mu.RUnlock()
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return t.entries[found].principal, true
}
