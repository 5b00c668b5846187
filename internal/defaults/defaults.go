// Package defaults fills the unset fields of an Options struct: the one
// rule every package's setDefaults follows (zero or negative means "the
// default"), written once.
package defaults

import (
	"log/slog"
)

// Number is what Positive fills: sizes, counts and durations (an int64).
type Number interface {
	~int | ~int64 | ~float64
}

// Positive sets *p to def when *p is zero or negative.
func Positive[T Number](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

// String sets *p to def when *p is empty.
func String[T ~string](p *T, def T) {
	if *p == "" {
		*p = def
	}
}

// Logger sets *p to slog.Default() when it is nil.
func Logger(p **slog.Logger) {
	if *p == nil {
		*p = slog.Default()
	}
}
