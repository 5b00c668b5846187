package funcsize

import (
	"fmt"
	"strings"
	"testing"
)

// The limits every function outside tests keeps (docs/design.md).
const (
	maxLines      = 120
	maxCyclomatic = 30
)

// TestFunctionSizes holds every function outside tests to the limits.
func TestFunctionSizes(t *testing.T) {
	funcs, err := Measure("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 100 {
		t.Fatalf("measured %d functions: the walk missed the tree", len(funcs))
	}
	var bad []string
	for _, f := range funcs {
		if f.Lines > maxLines || f.Cyclomatic > maxCyclomatic {
			bad = append(bad, fmt.Sprintf("%s %s: %d lines, cyclomatic %d", f.Pos, f.Name, f.Lines, f.Cyclomatic))
		}
	}
	if len(bad) > 0 {
		t.Errorf("functions over %d lines or cyclomatic %d (split them):\n%s", maxLines, maxCyclomatic, strings.Join(bad, "\n"))
	}
}

func TestCyclomaticCounts(t *testing.T) {
	// Check the counter on a function whose count is known by hand.
	src := `package p
func f(a, b bool, xs []int, c chan int) int {
	if a && b || !a { return 1 }
	for _, x := range xs { _ = x }
	for i := 0; i < 3; i++ {}
	switch { case a: ; case b: ; default: }
	select { case <-c: ; default: }
	g := func() { if b {} }
	g()
	return 0
}`
	n, err := cyclomaticOf(src)
	if err != nil {
		t.Fatal(err)
	}
	// 1 + if + && + || + range + for + 2 cases + 1 comm case + inner if
	if n != 10 {
		t.Fatalf("cyclomatic = %d, want 10", n)
	}
}
