package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// portableSchema is the JSON schema of T in the subset every tool-calling
// dialect accepts: each schema has a single type (Gemini function
// declarations and OpenAPI 3.0 reject `type: ["null","array"]`, the form
// inference gives a Go slice or map). A nil slice is never sent: the tools
// answer empty lists as [].
func portableSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err)) // a programming error, caught by every test
	}
	singleType(s)
	return s
}

// singleType rewrites s and every schema under it to a single type,
// dropping "null" from a type list.
func singleType(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		var kept []string
		for _, t := range s.Types {
			if t != "null" {
				kept = append(kept, t)
			}
		}
		if len(kept) == 1 {
			s.Type, s.Types = kept[0], nil
		}
	}
	for _, p := range s.Properties {
		singleType(p)
	}
	singleType(s.Items)
	singleType(s.AdditionalProperties)
	for _, d := range s.Defs {
		singleType(d)
	}
	for _, d := range s.Definitions {
		singleType(d)
	}
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.AllOf, s.OneOf, s.PrefixItems} {
		for _, x := range list {
			singleType(x)
		}
	}
}

// MarshalJSON writes a nil list as [], as the output schema says (a tool
// error returns the zero output).
func (o ListOutput) MarshalJSON() ([]byte, error) {
	type plain ListOutput
	if o.Conversations == nil {
		o.Conversations = []ConversationSummary{}
	}
	return json.Marshal(plain(o))
}

// MarshalJSON writes a nil list as [], as the output schema says (a tool
// error returns the zero output).
func (o ReadOutput) MarshalJSON() ([]byte, error) {
	type plain ReadOutput
	if o.Messages == nil {
		o.Messages = []TranscriptEntry{}
	}
	return json.Marshal(plain(o))
}
