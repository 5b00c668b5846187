package defaults

import (
	"log/slog"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	var o struct {
		n, neg, set int
		d           time.Duration
		s, kept     string
		log         *slog.Logger
	}
	o.neg, o.set, o.kept = -3, 7, "mine"
	Positive(&o.n, 5)
	Positive(&o.neg, 6)
	Positive(&o.set, 9)
	Positive(&o.d, time.Second)
	String(&o.s, "def")
	String(&o.kept, "def")
	Logger(&o.log)
	if o.n != 5 || o.neg != 6 || o.set != 7 || o.d != time.Second || o.s != "def" || o.kept != "mine" || o.log != slog.Default() {
		t.Fatalf("got %+v", o)
	}
}
