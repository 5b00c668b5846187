package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	npmMu   sync.Mutex
	npmDone = map[string]error{}
)

// NPM installs the pinned npm packages of dir (its package-lock.json, with
// npm ci) once per test binary, unless node_modules already holds a
// completed install of exactly that lock. A machine without npm or node
// is Missing: the test fails in CI and is skipped elsewhere; a failed
// install fails the test.
func NPM(t testing.TB, dir string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			Missing(t, "%s is required for the pinned clients of %s", tool, dir)
		}
	}
	npmMu.Lock()
	defer npmMu.Unlock()
	err, done := npmDone[dir]
	if !done {
		err = npmCI(dir)
		npmDone[dir] = err
	}
	if err != nil {
		t.Fatalf("installing the pinned npm packages of %s: %v", dir, err)
	}
}

// npmCI installs dir's lock file unless a marker written after a completed
// npm ci of exactly that lock is there (npm's own .package-lock.json can
// be left behind by a failed run).
func npmCI(dir string) error {
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	marker := filepath.Join(dir, "node_modules", ".agentik-npm-ci")
	if got, err := os.ReadFile(marker); err == nil && string(got) == want {
		return nil
	}
	// npm ci starts by deleting node_modules; doing it first avoids npm's
	// own rmdir failing (ENOTEMPTY) on a large, half-written tree.
	if err := os.RemoveAll(filepath.Join(dir, "node_modules")); err != nil {
		return err
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return &exec.Error{Name: "npm ci: " + string(out), Err: err}
	}
	return os.WriteFile(marker, []byte(want), 0o644)
}
