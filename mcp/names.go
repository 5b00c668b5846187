package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// maxNameLen is the longest function name OpenAI-compatible APIs accept.
const maxNameLen = 64

// sanitizeName maps a name onto [A-Za-z0-9_-]{1,64}: other characters
// become "_", and a name that is too long keeps its head and gets a short
// hash of the whole original, so two long names that share a prefix stay
// distinct.
func sanitizeName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "tool_" + shortHash(s)
	}
	if len(b) > maxNameLen {
		h := shortHash(s)
		return string(b[:maxNameLen-len(h)-1]) + "_" + h
	}
	return string(b)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// toolKey identifies an MCP tool: its server and its name on that server.
type toolKey struct{ server, tool string }

// assignNames gives every tool a model-facing name that is valid and unique
// within this source. Tools are taken in order (servers in config order,
// each server's tools in its listing order). A name shared by tools of two
// servers is prefixed with the server name for all of them, so the result
// does not depend on which server connected first; a clash that remains
// (two MCP names that sanitise alike, or a prefixed name that exists
// verbatim) gets a numeric suffix, first come first served.
func assignNames(keys []toolKey) []string {
	base := make([]string, len(keys))
	servers := make(map[string]map[string]bool) // sanitised name → servers exposing it
	for i, k := range keys {
		base[i] = sanitizeName(k.tool)
		if servers[base[i]] == nil {
			servers[base[i]] = make(map[string]bool)
		}
		servers[base[i]][k.server] = true
	}
	out := make([]string, len(keys))
	taken := make(map[string]bool, len(keys))
	for i, k := range keys {
		name := base[i]
		if len(servers[name]) > 1 {
			name = sanitizeName(k.server + "_" + k.tool)
		}
		if taken[name] {
			for n := 2; ; n++ {
				suffix := "_" + strconv.Itoa(n)
				cand := name
				if len(cand)+len(suffix) > maxNameLen {
					cand = cand[:maxNameLen-len(suffix)]
				}
				if cand += suffix; !taken[cand] {
					name = cand
					break
				}
			}
		}
		taken[name] = true
		out[i] = name
	}
	return out
}
