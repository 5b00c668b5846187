// Package testenv tells tests what their environment is. CI runs .ci/run,
// which exports CI=true; a test that needs a tool or service the machine
// lacks is skipped on a developer's machine and fails in CI, where it must
// run. Every test decides this through Missing, so there is one check.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true, as .ci/run exports).
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test that cannot run here: it fails in CI and is skipped
// elsewhere. The message says what is missing.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=true: this test must run in CI)", msg)
	}
	t.Skip(msg)
}
