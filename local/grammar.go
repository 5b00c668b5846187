package local

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentik/agentik"
)

// The grammar (llama.cpp's GBNF) of a tool call: one JSON object
// {"name": …, "arguments": {…}} whose arguments follow the named tool's
// JSON Schema, in the subset below; what the subset lacks ($ref, patterns,
// lengths, additionalProperties) is any JSON value of the right kind.
//
// A schema's object is written with its required properties first, in the
// order of "required", then the others in name order, each optional.

const grammarBase = `ws ::= [ \t\n]?
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ":" ws value ws ( "," ws string ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
integer ::= "-"? ( [0-9] | [1-9] [0-9]{0,15} )
boolean ::= "true" | "false"
null ::= "null"
`

// maxSchemaDepth bounds nested schemas; deeper ones are any value.
const maxSchemaDepth = 12

type grammar struct {
	rules []string
	n     int
}

// toolGrammar is the grammar of a call to one of tools.
func toolGrammar(tools []agentik.ToolSpec) string {
	g := &grammar{}
	var alts []string
	for _, t := range tools {
		var schema any
		if len(t.Parameters) > 0 {
			_ = json.Unmarshal(t.Parameters, &schema) // invalid: any object
		}
		args := g.schema(schema, 0)
		if m, ok := schema.(map[string]any); !ok || m["type"] != "object" && m["properties"] == nil {
			args = "object"
		}
		alts = append(alts, fmt.Sprintf(`%s ws "," ws "\"arguments\"" ws ":" ws %s`, literal(t.Name), args))
	}
	root := fmt.Sprintf(`root ::= "{" ws "\"name\"" ws ":" ws ( %s ) ws "}"`, strings.Join(alts, " | "))
	return strings.Join(append(append([]string{root}, g.rules...), grammarBase), "\n")
}

// rule adds a rule for body and returns its name.
func (g *grammar) rule(body string) string {
	g.n++
	name := fmt.Sprintf("r%d", g.n)
	g.rules = append(g.rules, name+" ::= "+body)
	return name
}

// schema returns a grammar expression for a JSON Schema.
func (g *grammar) schema(s any, depth int) string {
	m, ok := s.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return "value"
	}
	if v, ok := m["const"]; ok {
		return jsonLiteral(v)
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		alts := make([]string, len(e))
		for i, v := range e {
			alts[i] = jsonLiteral(v)
		}
		return g.rule(strings.Join(alts, " | "))
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok && len(list) > 0 {
			alts := make([]string, len(list))
			for i, sub := range list {
				alts[i] = g.schema(sub, depth+1)
			}
			return g.rule(strings.Join(alts, " | "))
		}
	}
	switch t := m["type"].(type) {
	case string:
		return g.typed(t, m, depth)
	case []any:
		var alts []string
		for _, x := range t {
			if name, ok := x.(string); ok {
				alts = append(alts, g.typed(name, m, depth))
			}
		}
		if len(alts) > 0 {
			return g.rule(strings.Join(alts, " | "))
		}
	}
	if m["properties"] != nil {
		return g.typed("object", m, depth)
	}
	return "value"
}

func (g *grammar) typed(t string, m map[string]any, depth int) string {
	switch t {
	case "string", "number", "integer", "boolean", "null":
		return t
	case "array":
		if items, ok := m["items"]; ok {
			it := g.schema(items, depth+1)
			return g.rule(fmt.Sprintf(`"[" ws ( %s ws ( "," ws %s ws )* )? "]"`, it, it))
		}
		return "array"
	case "object":
		return g.object(m, depth)
	}
	return "value"
}

// object is an object with the schema's properties: the required ones in
// order, then the others in name order, each optional. No properties
// named: any object, unless "properties" is there and empty.
func (g *grammar) object(m map[string]any, depth int) string {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		if _, named := m["properties"]; named && m["additionalProperties"] != true {
			return g.rule(`"{" ws "}"`)
		}
		return "object"
	}
	required := map[string]bool{}
	var order []string
	if list, ok := m["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok && props[name] != nil && !required[name] {
				required[name] = true
				order = append(order, name)
			}
		}
	}
	var optional []string
	for name := range props {
		if !required[name] {
			optional = append(optional, name)
		}
	}
	sort.Strings(optional)
	kv := func(name string) string {
		return fmt.Sprintf(`%s ws ":" ws %s ws`, literal(name), g.schema(props[name], depth+1))
	}
	var b strings.Builder
	b.WriteString(`"{" ws`)
	for i, name := range order {
		if i > 0 {
			b.WriteString(` "," ws`)
		}
		b.WriteString(" " + kv(name))
	}
	if len(optional) > 0 {
		b.WriteString(" " + g.optionals(optional, kv, len(order) > 0))
	}
	b.WriteString(` "}"`)
	return g.rule(b.String())
}

// optionals is the optional properties, each at most once, in order:
// rest(i) is "any of names[i:] after a comma", first(i) the same where the
// first one present needs no comma (nothing precedes it).
func (g *grammar) optionals(names []string, kv func(string) string, afterComma bool) string {
	kvs := make([]string, len(names))
	for i, n := range names {
		kvs[i] = g.rule(kv(n))
	}
	rest := make([]string, len(names)+1)
	rest[len(names)] = `""`
	for i := len(names) - 1; i >= 0; i-- {
		rest[i] = g.rule(fmt.Sprintf(`( "," ws %s )? %s`, kvs[i], rest[i+1]))
	}
	if afterComma {
		return rest[0]
	}
	alts := make([]string, len(names))
	for i := range names {
		alts[i] = kvs[i] + " " + rest[i+1]
	}
	return g.rule("( " + strings.Join(alts, " | ") + " )?")
}

// jsonLiteral is a GBNF literal of v's JSON text.
func jsonLiteral(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return gbnfString(string(b))
}

// literal is a GBNF literal of the JSON string s.
func literal(s string) string {
	b, _ := json.Marshal(s)
	return gbnfString(string(b))
}

// gbnfString quotes s as a GBNF string literal.
func gbnfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
