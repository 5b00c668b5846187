package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/hybridgroup/yzma/pkg/llama"
)

// LlamaVersion is the llama.cpp release this build binds: the one
// github.com/hybridgroup/yzma v1.28.0 was made for, and the one npm's
// @node-llama-cpp/linux-x64 3.22.1 ships (llama_version() reports
// "0.5.0-dev"). Another release may differ in its structures' layout
// without a symbol to show it, so it is refused at start-up.
const LlamaVersion = "0.5.0"

// ErrLibrary marks a start-up error about llama.cpp's libraries.
var ErrLibrary = errors.New("llama.cpp library")

// The libraries yzma opens by their plain names; a release may name two of
// them with a version (libllama.v0.5.0.so).
var libNames = []string{"ggml", "ggml-base", "llama"}

// lib is the process's one llama.cpp: yzma keeps its functions in package
// variables, so it is loaded once, from one folder.
var lib struct {
	sync.Mutex
	dir string // AGENTIK_LLAMA_LIB as given
	err error
}

// LoadLibrary loads llama.cpp's shared libraries from dir once per process.
// Its errors name what is missing or incompatible and wrap ErrLibrary.
// Loading again from the same folder is a no-op; from another, an error.
func LoadLibrary(dir string) error {
	lib.Lock()
	defer lib.Unlock()
	if lib.dir != "" {
		if filepath.Clean(dir) != lib.dir {
			return fmt.Errorf("%w: already loaded from %s, cannot load %s too (one llama.cpp per process)", ErrLibrary, lib.dir, dir)
		}
		return lib.err
	}
	err := loadLibrary(dir)
	if err == nil {
		lib.dir = filepath.Clean(dir)
	}
	return err
}

func loadLibrary(dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: no folder given (AGENTIK_LLAMA_LIB: the folder of llama.cpp's shared libraries, libllama.so and libggml*.so)", ErrLibrary)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not a folder (AGENTIK_LLAMA_LIB must name the folder holding libllama.so)", ErrLibrary, dir)
	}
	files := map[string]string{}
	for _, name := range libNames {
		f, err := findLib(dir, name)
		if err != nil {
			return err
		}
		files[name] = f
	}
	if err := checkVersion(files["llama"]); err != nil {
		return err
	}
	yz, err := plainNames(dir, files)
	if err != nil {
		return err
	}
	if err := llama.Load(yz); err != nil {
		return fmt.Errorf("%w: %s does not offer what agentik needs (want llama.cpp %s): %v", ErrLibrary, dir, LlamaVersion, err)
	}
	llama.LogSet(llama.LogSilent())
	llama.Init() // the backends (libggml-cpu-*.so) from the same folder
	return nil
}

// findLib finds lib<name>.so in dir, or the one lib<name>.v*.so there.
func findLib(dir, name string) (string, error) {
	plain := filepath.Join(dir, "lib"+name+".so")
	if _, err := os.Stat(plain); err == nil {
		return plain, nil
	}
	versioned, _ := filepath.Glob(filepath.Join(dir, "lib"+name+".v*.so"))
	switch len(versioned) {
	case 1:
		return versioned[0], nil
	case 0:
		return "", fmt.Errorf("%w: no lib%s.so in %s (AGENTIK_LLAMA_LIB must name the folder of llama.cpp %s's libraries)", ErrLibrary, name, dir, LlamaVersion)
	}
	return "", fmt.Errorf("%w: several versions of lib%s in %s: %s", ErrLibrary, name, dir, strings.Join(versioned, ", "))
}

// checkVersion asks the library which llama.cpp it is (llama_version).
func checkVersion(path string) error {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return fmt.Errorf("%w: cannot load %s: %v", ErrLibrary, path, err)
	}
	if _, err := purego.Dlsym(h, "llama_version"); err != nil {
		_ = purego.Dlclose(h)
		return fmt.Errorf("%w: %s has no symbol llama_version: not llama.cpp %s (older releases lack it)", ErrLibrary, path, LlamaVersion)
	}
	var version func() string
	purego.RegisterLibFunc(&version, h, "llama_version")
	v := version()
	if v != LlamaVersion && !strings.HasPrefix(v, LlamaVersion+"-") {
		_ = purego.Dlclose(h)
		return fmt.Errorf("%w: %s is llama.cpp %s; this agentik needs llama.cpp %s (as npm's @node-llama-cpp/linux-x64 3.22.1 ships it)", ErrLibrary, path, v, LlamaVersion)
	}
	return nil
}

// plainNames returns a folder where every library has the plain name yzma
// opens: dir itself when they have, otherwise a folder in the temporary
// directory (one per dir) of links to dir's files, the versioned ones also
// under their plain names.
func plainNames(dir string, files map[string]string) (string, error) {
	plain := true
	for name, f := range files {
		plain = plain && filepath.Base(f) == "lib"+name+".so"
	}
	if plain {
		return dir, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLibrary, err)
	}
	sum := sha256.Sum256([]byte(abs))
	links := filepath.Join(os.TempDir(), "agentik-llama-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(links, 0o700); err != nil {
		return "", fmt.Errorf("%w: a folder for the libraries' plain names: %v", ErrLibrary, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLibrary, err)
	}
	link := func(target, name string) error {
		at := filepath.Join(links, name)
		if cur, err := os.Readlink(at); err == nil && cur == target {
			return nil
		}
		_ = os.Remove(at)
		return os.Symlink(target, at)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".so") {
			if err := link(filepath.Join(abs, e.Name()), e.Name()); err != nil {
				return "", fmt.Errorf("%w: %v", ErrLibrary, err)
			}
		}
	}
	for name, f := range files {
		t, _ := filepath.Abs(f)
		if err := link(t, "lib"+name+".so"); err != nil {
			return "", fmt.Errorf("%w: %v", ErrLibrary, err)
		}
	}
	return links, nil
}
