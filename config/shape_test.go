package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// aliasBomb is the "billion laughs": ten aliases of ten aliases of … a
// list of ten, levels deep, under key (a path of the file).
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("agents:\n  - id: a\n    tools:\n      mcp_servers:\n        l0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "        l%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// longKeys nests keys of n bytes levels deep: each key's path holds every
// key above it.
func longKeys(levels, n int) string {
	key := strings.Repeat("k", n)
	return "agents: " + strings.Repeat("{? "+key+" : ", levels) + "x" + strings.Repeat("}", levels) + "\n"
}

// TestLoadRefusesYAMLBombs: files that used to cost hundreds of megabytes
// (a 20 KB file nested 9,999 deep: 309 MiB allocated by Load, 342 MiB of
// RSS for agentik config check) are refused before the library builds
// their tree or the loader walks it, with the file and the line, for a few
// megabytes at most.
func TestLoadRefusesYAMLBombs(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // a regular expression after "file:"
	}{
		{"flow sequences 9,999 deep", "agents: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n",
			`^1: nested deeper than 64 levels`},
		{"flow mappings 4,999 deep", "agents: " + strings.Repeat("{a: ", 4999) + strings.Repeat("}", 4999) + "\n",
			`^1: nested deeper than 64 levels`},
		{"single-pair mappings in sequences", "agents: " + strings.Repeat("[a: ", 4999) + strings.Repeat("]", 4999) + "\n",
			`^1: nested deeper than 64 levels`},
		{"block sequences 9,999 deep", "agents:\n" + strings.Repeat("- ", 9999) + "x\n",
			`^2: nested deeper than 64 levels`},
		{"indented block mappings", func() string {
			var b strings.Builder
			for i := range 200 {
				b.WriteString(strings.Repeat("  ", i) + "a:\n")
			}
			return b.String()
		}(), `^65: nested deeper than 64 levels`},
		{"a wide file", "agents: [" + strings.Repeat("[],", (maxFileBytes-20)/3) + "]\n",
			`^1: more than 100000 keys, items and values`},
		{"an alias bomb", aliasBomb(9),
			`^9: with its aliases \(\*a\d\) expanded, the document holds more than 100000 keys`},
		{"aliases that nest deeper", "agents:\n  - &deep " + strings.Repeat("[", 40) + strings.Repeat("]", 40) +
			"\n  - " + strings.Repeat("[", 30) + "*deep" + strings.Repeat("]", 30) + "\n",
			`^3: with its aliases \(\*deep\) expanded, the document nests deeper than 64 levels`},
		{"aliases of a long value", "x: &s " + strings.Repeat("y", 100_000) + "\nagents:\n  - id: a\n    tools:\n      mcp_servers:\n        fs: {command: x, args: [" + strings.Repeat("*s, ", 1000) + "]}\n",
			`^6: with its aliases \(\*s\) expanded, the document is larger than 4194304 bytes`},
		{"long keys nested", longKeys(40, 30_000),
			`^1: the paths of its keys .* add up to more than 4194304 bytes`},
		{"UTF-16", "\xff\xfea\x00:\x00", `^ the file is UTF-16`},
		{"a byte-order mark inside", "a: b\n\xef\xbb\xbfc: d\n", `^2: a byte-order mark`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "bomb.yaml", tc.yaml)
			var err error
			alloc := allocated(func() { _, err = Load(path, env(nil)) })
			msg := fmt.Sprint(err)
			if !strings.HasPrefix(msg, path+":") || !regexp.MustCompile(tc.want).MatchString(strings.TrimPrefix(msg, path+":")) {
				t.Errorf("error %.300q, want %s:%s", msg, path, tc.want)
			}
			var fe FileError
			if !errors.As(err, &fe) || fe.File != path {
				t.Errorf("not a FileError naming the file: %#v", err)
			}
			if limit := uint64(16 << 20); alloc > limit {
				t.Errorf("Load allocated %.1f MiB, want at most %d MiB", float64(alloc)/(1<<20), limit>>20)
			}
			t.Logf("%d bytes: refused after %.2f MiB allocated", len(tc.yaml), float64(alloc)/(1<<20))
		})
	}
}

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestShapeLimitsAreExact: 64 levels are read, 65 refused, whichever way
// they nest; the example configurations are far from every bound.
func TestShapeLimitsAreExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nest  func(levels int) string // a document of that many collections deep
		lines int                     // the line the refusal names
	}{
		{"flow", func(n int) string { return "x: " + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "\n" }, 1},
		{"flow mapping in a sequence", func(n int) string {
			return "x: " + strings.Repeat("[a: ", (n-1)/2) + strings.Repeat("[", (n-1)%2) + strings.Repeat("]", (n-1)%2) + strings.Repeat("]", (n-1)/2) + "\n"
		}, 1},
		{"block", func(n int) string { return strings.Repeat("- ", n) + "x\n" }, 1},
		{"indentless sequences", func(n int) string {
			var b strings.Builder
			for i := range n / 2 {
				fmt.Fprintf(&b, "%sa:\n%s- ", strings.Repeat("  ", i), strings.Repeat("  ", i))
				b.WriteString("\n")
			}
			if n%2 == 1 {
				b.WriteString(strings.Repeat("  ", n/2) + "[]\n")
			}
			return b.String()
		}, 0},
		{"alias", func(n int) string {
			return "a: &a " + strings.Repeat("[", 10) + strings.Repeat("]", 10) + "\nb: " + strings.Repeat("[", n-11) + "*a" + strings.Repeat("]", n-11) + "\n"
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{maxDepth, maxDepth + 1} {
				doc := tc.nest(n)
				var root yaml.Node
				if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
					t.Fatalf("%d levels: %v\n%s", n, err, doc)
				}
				if d := treeDepth(&root, false); d != n && tc.name != "alias" {
					t.Fatalf("the document is %d deep, want %d:\n%s", d, n, doc)
				}
				e := shapeOf([]byte(doc))
				if e == nil {
					e = checkTree(&root)
				}
				switch {
				case n == maxDepth && e != nil:
					t.Errorf("%d levels refused: %+v", n, e)
				case n > maxDepth && (e == nil || !strings.Contains(e.problem, "deeper than 64 levels")):
					t.Errorf("%d levels not refused: %+v", n, e)
				case n > maxDepth && tc.lines > 0 && e.line != tc.lines:
					t.Errorf("refused at line %d, want %d", e.line, tc.lines)
				}
			}
		})
	}
	for name, doc := range map[string]string{"config.Example": Example, "config.ExampleFull": ExampleFull, "the SPEC example": specExample} {
		s := &shapeScanner{b: []byte(doc), indent: -1, allowed: true}
		if e := s.run(); e != nil || s.stopped || s.deepest > 8 || s.values > 1000 {
			t.Errorf("%s: %+v, stopped %v, %d deep, %d values", name, e, s.stopped, s.deepest, s.values)
		}
	}
}

// TestLoadReportsAHundredMistakes: a file of thousands of wrong items
// gives a hundred mistakes and a count of the rest, not a line each.
func TestLoadReportsAHundredMistakes(t *testing.T) {
	path := writeFile(t, t.TempDir(), "many.yaml", "agents:\n"+strings.Repeat("  - {id: a, modle: x}\n", 5000))
	_, err := Load(path, env(nil))
	errs := unjoin(err)
	if len(errs) != maxMistakes+1 || !strings.HasPrefix(errs[maxMistakes].Error(), path+": and ") || !strings.HasSuffix(errs[maxMistakes].Error(), " more mistakes") {
		t.Fatalf("%d mistakes, the last %v", len(errs), errs[len(errs)-1])
	}
}

// treeDepth is the number of collections the deepest node of n is in,
// aliases followed when expand is set.
func treeDepth(n *yaml.Node, expand bool) int {
	if n.Kind == yaml.AliasNode {
		if expand && n.Alias != nil {
			return treeDepth(n.Alias, expand)
		}
		return 0
	}
	d := 0
	for _, c := range n.Content {
		d = max(d, treeDepth(c, expand))
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		d++
	}
	return d
}

func treeNodes(n *yaml.Node) int {
	c := 1
	if n.Kind == yaml.DocumentNode {
		c = 0
	}
	for _, x := range n.Content {
		c += treeNodes(x)
	}
	return c
}

// FuzzShape checks the scanner against the library it mirrors: for every
// text the library reads, the scanner saw at least as many levels and
// values as the library built, and never thought the library would stop.
func FuzzShape(f *testing.F) {
	for _, s := range []string{
		specExample, Example, ExampleFull,
		"a:\n- b\n- c: d\n  e: [f, {g: h}]\n",
		"- - - x\n- ? a\n  : b\n",
		"a: |\n  text [[[\n  more\nb: >-\n    folded\n  # comment\nc: 'it''s [' \n",
		"a: plain\n  continued [ { \"\nb: \"multi\n  line\" \n",
		"[a: b, ? c : d, e]\n",
		"&x a: *x\n!!str b: !t [c]\n",
		"--- a\n--- [b]\n...\n%YAML 1.2\n---\nc: d\n",
		"a:\r\n  - b\r\n\xc2\x85c: d\n",
		"key: value # comment\n# only a comment\n  \n",
		"a: |2\n   indented\n  b\n",
		"[a, b]: c\n{d: e}: f\n",
		"a: \"\\\"[\" \n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		s := &shapeScanner{b: []byte(doc), indent: -1, allowed: true}
		if bytes.HasPrefix(s.b, utf8BOM) {
			s.pos = len(utf8BOM)
		}
		if bytes.HasPrefix(s.b, []byte{0xFE, 0xFF}) || bytes.HasPrefix(s.b, []byte{0xFF, 0xFE}) {
			return
		}
		refused := s.run() != nil
		dec := yaml.NewDecoder(strings.NewReader(doc))
		depth, nodes := 0, 0
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return // the library's own error; no tree
			}
			depth, nodes = max(depth, treeDepth(&n, false)), nodes+treeNodes(&n)
		}
		if refused {
			return
		}
		if s.stopped {
			t.Fatalf("the scanner stopped at line %d where the library reads on:\n%q", s.line+1, doc)
		}
		if s.deepest < depth || s.values < nodes {
			t.Fatalf("the scanner saw %d levels and %d values, the library built %d and %d:\n%q", s.deepest, s.values, depth, nodes, doc)
		}
	})
}
