package agentik

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlainJSONTakesRequestBodies: the bodies clients send pass the plain
// check (so they skip the token walk); anything CheckJSON must refuse, or
// that the plain check does not model, goes to the token walk.
func TestPlainJSONTakesRequestBodies(t *testing.T) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"what is the weather in Paris?"}],"if_busy":"enqueue"}`,
		`{"text":"hello"}`,
		` {"a":[1,-2.5e+3,0,true,false,null,"\u00e9\n"],"b":{}} `,
		`[]`, `"x"`, `0`, `{"":1,"k":2}`,
	} {
		if !plainJSON([]byte(s)) {
			t.Errorf("%s: not taken", s)
		}
	}
	for _, s := range []string{
		`{"a":1,"A":2}`,                                        // duplicate by case
		`{"content":1,"Content":2}`,                            // the same
		`{"\u0061":1}`,                                         // an escaped key
		`{"é":1}`,                                              // a key outside ASCII
		`{"a":1} {"a":2}`,                                      // two values
		`{"a":1`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\x"`, `tru`, // invalid
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		`[` + strings.Repeat("1,", MaxJSONArray) + `1]`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}`,
	} {
		if plainJSON([]byte(s)) {
			t.Errorf("%.60s: taken", s)
		}
	}
	deep := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	full := `[` + strings.Repeat("1,", MaxJSONArray-1) + `1]`
	for _, s := range []string{deep, full} {
		if !plainJSON([]byte(s)) {
			t.Errorf("%.20s…: at the limit, not taken", s)
		}
	}
}

// FuzzPlainJSON: whatever the plain check takes is valid JSON that the
// token walk also finds nothing wrong with, so CheckJSON's verdict does not
// depend on which of the two ran.
func FuzzPlainJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`, `{"a":1,"A":2}`, `{"a":{"b":[1,2,{"c":null}]}}`,
		`[1,-0.5e-7,"\u00e9\ud83d\ude00"]`, `{"a":1} `, `{"k":"v","K ":1}`, `01`, `{"a":1,}`,
		`{"\u0061":1,"a":2}`, `{"\u212a":1,"k":2}`, "{\"\u212a\":1,\"k\":2}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !plainJSON(b) {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("%q: taken but not valid JSON", b)
		}
		if err := checkTokens(b); err != nil {
			t.Fatalf("%q: taken, but the token walk says %v", b, err)
		}
	})
}

// BenchmarkCheckJSON: a message body, as a client sends it
// (go test -run '^$' -bench CheckJSON -benchmem .).
func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(`{"content":[{"type":"text","text":"what is the weather like in Paris today, and tomorrow?"}],"if_busy":"enqueue"}`)
	b.Run("CheckJSON", func(b *testing.B) {
		for b.Loop() {
			if err := CheckJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("token walk", func(b *testing.B) {
		for b.Loop() {
			if err := checkTokens(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
