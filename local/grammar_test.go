package local

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzToolGrammar: any tool schema, valid JSON or not, gives a grammar
// with a root rule and every rule it names defined.
func FuzzToolGrammar(f *testing.F) {
	f.Add(`{"type":"object","properties":{"unit":{"enum":["c","f"]},"days":{"type":"integer"}},"required":["unit"]}`)
	f.Add(`{"type":"object","properties":{}}`)
	f.Add(`{"anyOf":[{"type":"string"},{"type":["number","null"]}]}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"const":"x\"\\"}}}}}}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, schema string) {
		g := toolGrammar([]agentik.ToolSpec{{Name: "t\"ool", Parameters: agentik.RawJSON(schema)}})
		checkGrammar(t, g)
	})
}

// checkGrammar fails unless every rule g refers to is defined once.
func checkGrammar(t *testing.T, g string) {
	t.Helper()
	defined := map[string]bool{}
	var bodies []string
	for _, line := range strings.Split(strings.TrimSpace(g), "\n") {
		name, body, ok := strings.Cut(line, " ::= ")
		if !ok || defined[name] {
			t.Fatalf("line %q of\n%s", line, g)
		}
		defined[name] = true
		bodies = append(bodies, body)
	}
	if !defined["root"] {
		t.Fatalf("no root:\n%s", g)
	}
	for _, body := range bodies {
		for _, word := range strings.Fields(stripLiterals(body)) {
			if isRuleName(word) && !defined[word] {
				t.Fatalf("rule %q is not defined:\n%s", word, g)
			}
		}
	}
}

// stripLiterals removes "…" literals and […] classes from a rule body.
func stripLiterals(body string) string {
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '"', '[':
			end := byte('"')
			if c == '[' {
				end = ']'
			}
			for i++; i < len(body) && body[i] != end; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isRuleName(w string) bool {
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return w != ""
}

// TestToolGrammarShapes: the schema subset becomes the rules it should.
func TestToolGrammarShapes(t *testing.T) {
	g := toolGrammar([]agentik.ToolSpec{weather, {Name: "free"}})
	checkGrammar(t, g)
	for _, want := range []string{`"\"weather\""`, `"\"unit\""`, `"\"celsius\"" | "\"fahrenheit\""`, `"\"days\"" ws ":" ws integer`, `"\"free\"" ws "," ws "\"arguments\"" ws ":" ws object`} {
		if !strings.Contains(g, want) {
			t.Errorf("no %s in\n%s", want, g)
		}
	}
	var v any
	if json.Unmarshal([]byte(`"x"`), &v) != nil || jsonLiteral(v) != `"\"x\""` {
		t.Errorf("jsonLiteral: %s", jsonLiteral(v))
	}
}
