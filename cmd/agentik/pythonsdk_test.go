package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// TestPythonSDK runs the Python SDK's tests (sdk/python/tests, stdlib
// unittest) against this package's binary with a scripted model, under each
// Python here that has pydantic and websockets: Debian's /usr/bin/python3
// (pydantic 1.10 and websockets 10.4 from apt, as .ci/run installs them)
// and the python3 on PATH (pyenv: pydantic 2). The tests start and restart
// agentik processes themselves (AGENTIK_BIN); the model is the llmtest
// server below (AGENTIK_TEST_LLM_URL).
//
// Locally a Python without pydantic or websockets is skipped; with CI=true
// both pydantic majors must be tested, and no Python test may be skipped.
func TestPythonSDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	pythons := findPythons(t)
	if d := os.Getenv("AGENTIK_TEST_WEBSOCKETS_DIR"); d != "" {
		pythons = withWebsockets(t, pythons, d)
	}
	majors := map[string]bool{}
	for _, py := range pythons {
		majors[strings.SplitN(py.Pydantic, ".", 2)[0]] = true
	}
	if !majors["1"] || !majors["2"] {
		msg := fmt.Sprintf("the Python SDK is tested with pydantic 1 and 2; found Pythons with pydantic %v "+
			"(apt-get install python3-websockets python3-pydantic gives /usr/bin/python3 pydantic 1.10 and websockets 10.4)", sortedKeys(majors))
		if testenv.CI() || len(pythons) == 0 {
			testenv.Missing(t, "%s", msg)
		}
		t.Log(msg)
	}

	t.Run("readme-install", func(t *testing.T) { readmeInstall(t, dir) })

	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(pythonScript)

	for _, py := range pythons {
		name := fmt.Sprintf("python%s-pydantic%s-websockets%s", py.Version, py.Pydantic, py.Websockets)
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(py.Executable, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
			cmd.Dir = dir
			env := []string{"AGENTIK_BIN=" + binary, "AGENTIK_TEST_LLM_URL=" + llm.URL(), "PYTHONDONTWRITEBYTECODE=1"}
			if py.Path != "" {
				env = append(env, "PYTHONPATH="+py.Path)
			}
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s -m unittest: %v\n%s", py.Executable, err, out)
			}
			ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in `).FindSubmatch(out)
			if ran == nil || string(ran[1]) == "0" || !regexp.MustCompile(`(?m)^OK$`).Match(out) {
				// "OK (skipped=N)" fails too: every test must run here.
				t.Fatalf("unexpected unittest output (every test must run and pass):\n%s", out)
			}
			t.Logf("%s: %s tests passed\n%s", name, ran[1], out)
		})
	}

	// The package is typed (py.typed): mypy --strict checks it against each
	// pydantic it was tested with (--python-executable picks the packages).
	mypy := ""
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(c, "-c", "import mypy").Run() == nil {
			mypy = c
			break
		}
	}
	if mypy == "" {
		if testenv.CI() {
			testenv.Missing(t, "mypy is needed to check the Python SDK's types (apt-get install python3-mypy)")
		}
		t.Log("mypy not found: the Python SDK's types are not checked")
		return
	}
	// Analysing pydantic 2 takes mypy a while, so its cache is kept between
	// runs, one per checkout: mypy's file cache is not safe for two
	// processes writing different versions of the same module at once, as
	// tests in several worktrees of one machine would.
	cache := t.TempDir()
	if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "agentik-test", "mypy", fmt.Sprintf("%x", sha256.Sum256([]byte(dir)))[:16])
	}
	for _, py := range pythons {
		t.Run(fmt.Sprintf("mypy-pydantic%s", py.Pydantic), func(t *testing.T) {
			cmd := exec.Command(mypy, "-m", "mypy", "--strict", "--cache-dir", filepath.Join(cache, "pydantic"+py.Pydantic), "--python-executable", py.Executable, "agentik")
			cmd.Dir = dir
			cmd.Env = os.Environ()
			if py.Path != "" {
				cmd.Env = append(cmd.Env, "PYTHONPATH="+py.Path)
			}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Success: no issues found") {
				t.Fatalf("mypy --strict agentik: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// pythonNumbers counts the answers to "pick a number": another each time.
var pythonNumbers atomic.Int64

// pythonScript is the model of the Python SDK's tests, by the last user
// text (sdk/python/tests/harness.py describes it to the tests).
func pythonScript(r llmtest.Request) llmtest.Reply {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
		return llmtest.Text("It is tea time.")
	}
	switch text := r.LastUserText(); text {
	case "hello":
		return llmtest.Stream().Role().Content("Hel", "lo, ", "world").Finish("stop").Usage(7, 3).Done()
	case "fail":
		return llmtest.APIError(400, "invalid_request_error", "", "scripted failure")
	case "time?":
		return llmtest.ToolCalls(llmtest.Call("current_time", `{}`))
	case "hang":
		return llmtest.Stream().Role().Content("partial").Hang()
	case "pick a number":
		return llmtest.Text(fmt.Sprintf("Number %d.", pythonNumbers.Add(1)))
	case "history":
		var said []string
		for _, m := range r.Messages {
			if m.Role == "user" {
				said = append(said, m.Text())
			}
		}
		return llmtest.Stream().Role().Content("you said: "+strings.Join(said, " | ")).Finish("stop").Usage(5, 5).Done()
	default:
		return llmtest.Text("echo: " + text)
	}
}

// python is an interpreter able to run the SDK. Path, when set, is the
// PYTHONPATH that gives it websockets.
type python struct {
	Executable string `json:"executable"`
	Version    string `json:"version"`
	Pydantic   string `json:"pydantic"`
	Websockets string `json:"websockets"`
	WSDir      string `json:"websockets_dir"`
	Path       string `json:"-"`
}

const probePython = `import json, os, platform, sys
out = {"executable": sys.executable, "version": platform.python_version(), "pydantic": "", "websockets": "", "websockets_dir": ""}
try:
    import pydantic
    out["pydantic"] = pydantic.VERSION
except Exception:
    pass
try:
    import websockets
    out["websockets"] = websockets.__version__
    out["websockets_dir"] = os.path.dirname(websockets.__file__)
except Exception:
    pass
print(json.dumps(out))
`

// findPythons probes python3 on PATH and /usr/bin/python3. pyenv's Python
// has pydantic 2 but no websockets and no PyPI to get it from; Debian's
// websockets 10.4 is pure Python without dependencies, so an interpreter of
// the same version that lacks it gets that package alone through PYTHONPATH
// (a directory holding only a link to it), not Debian's whole
// dist-packages (whose pydantic 1 would shadow its own pydantic 2).
func findPythons(t *testing.T) []python {
	var found []python
	seen := map[string]bool{}
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		out, err := exec.Command(c, "-c", probePython).Output()
		if err != nil {
			t.Logf("%s: %v", c, err)
			continue
		}
		var py python
		if err := json.Unmarshal(out, &py); err != nil {
			t.Fatalf("%s probe: %v (%s)", c, err, out)
		}
		if py.Executable = pyOr(py.Executable, c); seen[py.Executable] {
			continue
		}
		seen[py.Executable] = true
		t.Logf("found %s: Python %s, pydantic %q, websockets %q", py.Executable, py.Version, py.Pydantic, py.Websockets)
		found = append(found, py)
	}
	var usable []python
	for _, py := range found {
		if py.Pydantic == "" {
			continue
		}
		if py.Websockets == "" {
			for _, other := range found {
				if other.Websockets != "" && pyMinor(other.Version) == pyMinor(py.Version) {
					link := t.TempDir()
					if err := os.Symlink(other.WSDir, filepath.Join(link, "websockets")); err != nil {
						t.Fatal(err)
					}
					py.Websockets, py.Path = other.Websockets, link
					break
				}
			}
		}
		if py.Websockets != "" {
			usable = append(usable, py)
		}
	}
	return usable
}

// withWebsockets gives every Python the websockets package at dir (a
// websockets source tree's src/websockets, say) instead of its own: to try
// the SDK with another websockets release than the installed one, run
//
//	AGENTIK_TEST_WEBSOCKETS_DIR=/path/to/websockets/src/websockets go test ./cmd/agentik -run PythonSDK
func withWebsockets(t *testing.T, pythons []python, dir string) []python {
	link := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(link, "websockets")); err != nil {
		t.Fatal(err)
	}
	var out []python
	for _, py := range pythons {
		cmd := exec.Command(py.Executable, "-c", "import websockets; print(websockets.__version__)")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+link)
		v, err := cmd.Output()
		if err != nil {
			t.Logf("%s cannot import websockets from %s: %v", py.Executable, dir, err)
			continue
		}
		py.Websockets, py.Path = strings.TrimSpace(string(v)), link
		out = append(out, py)
	}
	return out
}

func pyMinor(version string) string {
	p := strings.SplitN(version, ".", 3)
	if len(p) < 2 {
		return version
	}
	return p[0] + "." + p[1]
}

func pyOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readmeInstall runs the README's offline install block as written (from
// the root of a checkout: here a copy of sdk/python in an empty directory,
// so that the build leaves nothing in the tree) and checks that the venv's
// Python imports the installed package, with no network and no PYTHONPATH.
func readmeInstall(t *testing.T, dir string) {
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sh\n(/usr/bin/python3 -m venv[^`]*)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no offline install block starting /usr/bin/python3 -m venv")
	}
	if exec.Command("/usr/bin/python3", "-c", "import setuptools, websockets, pydantic, venv, ensurepip").Run() != nil {
		testenv.Missing(t, "the README's offline install needs Debian's python3-venv python3-setuptools python3-websockets python3-pydantic")
	}
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "sdk", "python"), os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	for _, junk := range []string{"build", "agentik.egg-info"} { // of a build in the tree
		os.RemoveAll(filepath.Join(root, "sdk", "python", junk))
	}
	cmd := exec.Command("sh", "-ec", string(m[1]))
	cmd.Dir = root
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PYTHONPATH" && !strings.HasPrefix(k, "PIP_") {
			env = append(env, kv)
		}
	}
	// No network: a pip that tried PyPI would fail (or hang) without these.
	cmd.Env = append(env, "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "http_proxy=http://127.0.0.1:1", "https_proxy=http://127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's install block: %v\n%s", err, out)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(out)), "0.1.0") {
		t.Fatalf("the installed package does not say its version:\n%s", out)
	}
	where, err := exec.Command(filepath.Join(root, ".venv", "bin", "python"), "-c", "import agentik; print(agentik.__file__)").CombinedOutput()
	if err != nil || !strings.Contains(string(where), filepath.Join(".venv", "lib")) {
		t.Fatalf("the venv does not import the installed package: %v %s", err, where)
	}
}
