package localtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik/internal/testenv"
)

// libRel is where npm puts @node-llama-cpp/linux-x64's libraries.
const libRel = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

var npmOnce struct {
	sync.Once
	dir string
	err error
}

// LlamaLib installs llama.cpp's libraries from local/testdata/llama's lock
// file (npm ci, once per test binary and lock) and returns their folder.
// Without npm or off linux-x64 the test is skipped, and fails in CI.
func LlamaLib(t testing.TB) string {
	t.Helper()
	npmOnce.Do(func() { npmOnce.dir, npmOnce.err = npmCI() })
	if npmOnce.err != nil {
		testenv.Missing(t, "llama.cpp's libraries from npm's @node-llama-cpp/linux-x64 (npm ci in local/testdata/llama): %v", npmOnce.err)
	}
	return npmOnce.dir
}

func npmCI() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("no source path")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "llama")
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	marker := filepath.Join(dir, "node_modules", ".agentik-npm-ci")
	if got, err := os.ReadFile(marker); err != nil || string(got) != want {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", err
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", errors.New(strings.TrimSpace(string(out)))
		}
		if err := os.WriteFile(marker, []byte(want), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, libRel), nil
}

// Hello is a model that answers "Hello world" and stops.
func Hello() Model {
	return Model{Next: map[int]int{
		Byte('\n'):     Word("▁Hello"),
		Word("▁Hello"): Word("▁world"),
		Word("▁world"): TokImEnd,
	}}
}

// La is a model that says "la" for ever.
func La() Model {
	return Model{Next: map[int]int{
		Byte('\n'):  Word("▁la"),
		Word("▁la"): Word("▁la"),
	}}
}
