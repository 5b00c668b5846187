// Package local runs a GGUF model inside the process (SPEC §22): llama.cpp's
// shared libraries loaded at run time through github.com/hybridgroup/yzma
// (purego, no cgo), behind agentik.LLM.
//
// One Model per file per process, shared by every agent that names it
// (Open). A model has Slots contexts, each with its own KV cache; a call
// takes the free slot whose cached tokens share the longest beginning with
// its prompt, keeps that part of the cache and decodes only the rest, so a
// conversation's next turn reuses the previous turn's cache (the prompt
// grows at its end) and a turn whose history was rewritten (compaction,
// another conversation in between) is rebuilt from the messages it is
// given. Calls beyond the slots queue.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hybridgroup/yzma/pkg/llama"
)

// ErrModel marks a start-up error about the model file.
var ErrModel = errors.New("local model")

// Options configure a local model.
type Options struct {
	Path    string // the GGUF file (AGENTIK_LOCAL_MODEL_PATH, model.path)
	Library string // the folder of llama.cpp's libraries (AGENTIK_LLAMA_LIB)
	Threads int    // CPU threads; 0: half the logical CPUs, at most 8

	// ContextTokens is each slot's context; 0: the model's training
	// context, at most 8192.
	ContextTokens int
	// Slots is how many calls run at once; more queue. 0: 1.
	Slots int
	// MaxTokens bounds one answer; 0: the context's room.
	MaxTokens int
	// Temperature 0 samples greedily; otherwise with TopP (default 0.95)
	// and Seed.
	Temperature float32
	TopP        float32
	Seed        uint32
}

// Model is a GGUF model loaded once and shared.
type Model struct {
	opts     Options
	model    llama.Model
	vocab    llama.Vocab
	template string
	name     string
	nCtx     int
	path     string
	slots    chan *slot // the free slots
	all      []*slot

	lastKept atomic.Int64 // prompt tokens the last call found in a cache (tests)
	onQueue  func()       // called when a call waits for a slot (tests)
}

// slot is one context and the tokens its KV cache holds.
type slot struct {
	ctx    llama.Context
	cached []llama.Token
}

var models struct {
	sync.Mutex
	byPath map[string]*Model
}

// Open loads the model at o.Path, or returns the one already loaded from
// that file (the first Open's other options win). Errors wrap ErrLibrary
// or ErrModel and name what is missing or incompatible.
func Open(o Options) (*Model, error) {
	if err := LoadLibrary(o.Library); err != nil {
		return nil, err
	}
	if o.Path == "" {
		return nil, fmt.Errorf("%w: no model file given (AGENTIK_LOCAL_MODEL_PATH or model.path: a GGUF file)", ErrModel)
	}
	abs, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	models.Lock()
	defer models.Unlock()
	if m := models.byPath[abs]; m != nil {
		return m, nil
	}
	m, err := load(abs, o)
	if err != nil {
		return nil, err
	}
	if models.byPath == nil {
		models.byPath = map[string]*Model{}
	}
	models.byPath[abs] = m
	return m, nil
}

func load(path string, o Options) (*Model, error) {
	if err := checkGGUF(path); err != nil {
		return nil, err
	}
	params := llama.ModelDefaultParams()
	params.NGpuLayers = 0
	model, err := llama.ModelLoadFromFile(path, params)
	if err != nil {
		return nil, fmt.Errorf("%w: llama.cpp %s could not load %s (an architecture, tensor type or vocabulary it does not know, or a damaged file)", ErrModel, LlamaVersion, path)
	}
	m := &Model{opts: o, model: model, vocab: llama.ModelGetVocab(model), name: filepath.Base(path), path: path}
	if n, ok := llama.ModelMetaValStr(model, "general.name"); ok && n != "" {
		m.name = n
	}
	m.template = llama.ModelChatTemplate(model, "")
	if m.template == "" {
		m.template = "chatml" // llama.cpp's own default
	}
	if _, err := applyTemplate(m.template, []chatMessage{{"user", "hi"}}); err != nil {
		llama.ModelFree(model)
		return nil, fmt.Errorf("%w: %s: its chat template is not one llama.cpp %s knows", ErrModel, path, LlamaVersion)
	}
	m.nCtx = o.ContextTokens
	if m.nCtx <= 0 {
		m.nCtx = min(int(llama.ModelNCtxTrain(model)), 8192)
	}
	if err := m.newSlots(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// checkGGUF reads the file's magic, so that a missing, unreadable or
// foreign file is named as such.
func checkGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: cannot read %s: %v", ErrModel, path, err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "GGUF" {
		return fmt.Errorf("%w: %s is not a GGUF file", ErrModel, path)
	}
	return nil
}

func (m *Model) newSlots() error {
	n := max(m.opts.Slots, 1)
	threads := m.opts.Threads
	if threads <= 0 {
		// Half the logical CPUs (the physical cores, mostly), at most 8:
		// llama.cpp's threads wait for each other by spinning, and more
		// threads than free cores is much slower, not faster.
		threads = min(max(runtime.NumCPU()/2, 1), 8)
	}
	m.slots = make(chan *slot, n)
	for range n {
		p := llama.ContextDefaultParams()
		p.NCtx = uint32(m.nCtx)
		p.NBatch = uint32(min(m.nCtx, 512))
		p.NUbatch = p.NBatch
		p.NSeqMax = 1
		p.NThreads = int32(threads)
		p.NThreadsBatch = int32(threads)
		p.NoPerf = 1
		ctx, err := llama.InitFromModel(m.model, p)
		if err != nil || ctx == 0 {
			return fmt.Errorf("%w: a context of %d tokens: %v", ErrModel, m.nCtx, err)
		}
		s := &slot{ctx: ctx}
		m.all = append(m.all, s)
		m.slots <- s
	}
	return nil
}

// Close frees the model; only for tests and tools that own it (the
// server's model lives as long as the process).
func (m *Model) Close() {
	for _, s := range m.all {
		llama.Free(s.ctx)
	}
	m.all = nil
	llama.ModelFree(m.model)
}

// Name is the model's general.name, or its file name.
func (m *Model) Name() string { return m.name }

// ContextTokens is each slot's context size.
func (m *Model) ContextTokens() int { return m.nCtx }

// CountTokens is how many tokens text is to the model's tokenizer (its
// special tokens, as a template writes them, count as one).
func (m *Model) CountTokens(text string) int {
	return len(llama.Tokenize(m.vocab, text, false, true))
}

// acquire takes the free slot whose cache shares the longest beginning
// with prompt; it waits while none is free.
func (m *Model) acquire(ctx context.Context, prompt []llama.Token) (*slot, error) {
	var s *slot
	select {
	case s = <-m.slots:
	default:
		if m.onQueue != nil {
			m.onQueue()
		}
		select {
		case s = <-m.slots:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// Trade for a better free slot if one is waiting.
	best, bestN := s, commonPrefix(s.cached, prompt)
	var others []*slot
	for {
		select {
		case o := <-m.slots:
			if n := commonPrefix(o.cached, prompt); n > bestN {
				others = append(others, best)
				best, bestN = o, n
			} else {
				others = append(others, o)
			}
			continue
		default:
		}
		break
	}
	for _, o := range others {
		m.slots <- o
	}
	return best, nil
}

func (m *Model) release(s *slot) { m.slots <- s }

func commonPrefix(a, b []llama.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
