// Package localtest writes the tiny GGUF models the tests of the local
// backend run (a llama with random weights whose next token the test
// chooses) and installs llama.cpp's libraries from npm for them. For tests
// only.
package localtest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// A GGUF file written by the tests (format version 3): metadata, tensor
// descriptions, then the tensors' data, each aligned to 32 bytes. All
// numbers are little-endian.

type KV struct {
	Key string
	Val any // string, uint32, int32, float32, bool, []string, []float32, []int32
}

type Tensor struct {
	Name string
	Dims []uint64 // innermost first, as GGUF writes them
	Data []float32
}

const ggufAlign = 32

// GGUF value types.
const (
	gtUint32  = 4
	gtInt32   = 5
	gtFloat32 = 6
	gtBool    = 7
	gtString  = 8
	gtArray   = 9
)

type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (g *ggufWriter) put(v any) {
	if g.err != nil {
		return
	}
	g.err = binary.Write(g.w, binary.LittleEndian, v)
	g.n += int64(binary.Size(v))
}

func (g *ggufWriter) str(s string) {
	g.put(uint64(len(s)))
	if g.err == nil {
		_, g.err = g.w.WriteString(s)
		g.n += int64(len(s))
	}
}

func (g *ggufWriter) value(v any) {
	switch v := v.(type) {
	case string:
		g.put(uint32(gtString))
		g.str(v)
	case uint32:
		g.put(uint32(gtUint32))
		g.put(v)
	case int32:
		g.put(uint32(gtInt32))
		g.put(v)
	case float32:
		g.put(uint32(gtFloat32))
		g.put(v)
	case bool:
		g.put(uint32(gtBool))
		g.put(v)
	case []string:
		g.put(uint32(gtArray))
		g.put(uint32(gtString))
		g.put(uint64(len(v)))
		for _, s := range v {
			g.str(s)
		}
	case []float32:
		g.put(uint32(gtArray))
		g.put(uint32(gtFloat32))
		g.put(uint64(len(v)))
		g.put(v)
	case []int32:
		g.put(uint32(gtArray))
		g.put(uint32(gtInt32))
		g.put(uint64(len(v)))
		g.put(v)
	default:
		g.err = fmt.Errorf("gguf: no type for %T", v)
	}
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlign != 0 && g.err == nil {
		g.put(uint8(0))
	}
}

func WriteGGUF(path string, kvs []KV, tensors []Tensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	g := &ggufWriter{w: bufio.NewWriter(f)}
	g.put([]byte("GGUF"))
	g.put(uint32(3))
	g.put(uint64(len(tensors)))
	g.put(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.Key)
		g.value(kv.Val)
	}
	var off uint64
	for _, t := range tensors {
		g.str(t.Name)
		g.put(uint32(len(t.Dims)))
		g.put(t.Dims)
		g.put(uint32(0)) // F32
		g.put(off)
		size := uint64(len(t.Data) * 4)
		off += (size + ggufAlign - 1) / ggufAlign * ggufAlign
	}
	g.pad()
	for _, t := range tensors {
		g.put(t.Data)
		g.pad()
	}
	if g.err == nil {
		g.err = g.w.Flush()
	}
	if err := f.Close(); g.err == nil {
		g.err = err
	}
	return g.err
}

// The tiny model: a llama with 2 layers, 64-wide embeddings and a
// SentencePiece vocabulary of special tokens, the 256 byte tokens and a
// few words. Its layers have random weights, but their outputs are scaled
// small, so the next token depends on the current one almost alone, and
// the output matrix is built so that next maps a token to the one that
// surely follows it: the tests choose what the model says.
const (
	tinyEmbd  = 64
	tinyHeads = 4
	tinyLayer = 2
	tinyFF    = 128
	tinyCtx   = 512
)

// The tiny vocabulary.
const (
	TokUnk = iota
	TokBOS
	TokEOS
	TokImStart
	TokImEnd
	TokToolCall
	TokByte0 // <0x00>; <0xXX> is TokByte0+XX
)

var tinyWords = []string{"▁Hello", "▁world", "▁la", "user", "assistant", "system"}

func Word(w string) int {
	for i, x := range tinyWords {
		if x == w {
			return TokByte0 + 256 + i
		}
	}
	panic("no word " + w)
}

func Byte(b byte) int { return TokByte0 + int(b) }

type Model struct {
	Next     map[int]int // the token that follows
	Template string      // tokenizer.chat_template; "" none
}

func tinyVocab() (tokens []string, scores []float32, types []int32) {
	add := func(s string, typ int32) {
		tokens = append(tokens, s)
		scores = append(scores, 0)
		types = append(types, typ)
	}
	add("<unk>", 2)
	add("<s>", 3)
	add("</s>", 3)
	add("<|im_start|>", 3)
	add("<|im_end|>", 3)
	add("<tool_call>", 4)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 6)
	}
	for _, w := range tinyWords {
		add(w, 1)
	}
	return tokens, scores, types
}

const ChatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// write writes the model to path.
func (tm Model) Write(t testing.TB, path string) {
	t.Helper()
	tokens, scores, types := tinyVocab()
	nv := len(tokens)
	r := rand.New(rand.NewPCG(1, 2))
	gauss := func(n int, std float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(r.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	embd := gauss(nv*tinyEmbd, 1)
	// The output row of token j points along the embeddings of the tokens
	// it follows: its logit is about 40 after them, noise of a few otherwise.
	out := make([]float32, nv*tinyEmbd)
	for k, j := range tm.Next {
		for d := range tinyEmbd {
			out[j*tinyEmbd+d] += 40 * embd[k*tinyEmbd+d] / tinyEmbd
		}
	}
	ts := []Tensor{
		{"token_embd.weight", []uint64{tinyEmbd, uint64(nv)}, embd},
		{"output_norm.weight", []uint64{tinyEmbd}, ones(tinyEmbd)},
		{"output.weight", []uint64{tinyEmbd, uint64(nv)}, out},
	}
	for l := range tinyLayer {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			Tensor{p + "attn_norm.weight", []uint64{tinyEmbd}, ones(tinyEmbd)},
			Tensor{p + "attn_q.weight", []uint64{tinyEmbd, tinyEmbd}, gauss(tinyEmbd*tinyEmbd, 0.1)},
			Tensor{p + "attn_k.weight", []uint64{tinyEmbd, tinyEmbd}, gauss(tinyEmbd*tinyEmbd, 0.1)},
			Tensor{p + "attn_v.weight", []uint64{tinyEmbd, tinyEmbd}, gauss(tinyEmbd*tinyEmbd, 0.1)},
			Tensor{p + "attn_output.weight", []uint64{tinyEmbd, tinyEmbd}, gauss(tinyEmbd*tinyEmbd, 0.001)},
			Tensor{p + "ffn_norm.weight", []uint64{tinyEmbd}, ones(tinyEmbd)},
			Tensor{p + "ffn_gate.weight", []uint64{tinyEmbd, tinyFF}, gauss(tinyEmbd*tinyFF, 0.1)},
			Tensor{p + "ffn_up.weight", []uint64{tinyEmbd, tinyFF}, gauss(tinyEmbd*tinyFF, 0.1)},
			Tensor{p + "ffn_down.weight", []uint64{tinyFF, tinyEmbd}, gauss(tinyEmbd*tinyFF, 0.001)},
		)
	}
	kvs := []KV{
		{"general.architecture", "llama"},
		{"general.name", "tiny-test"},
		{"general.alignment", uint32(ggufAlign)},
		{"llama.context_length", uint32(tinyCtx)},
		{"llama.embedding_length", uint32(tinyEmbd)},
		{"llama.block_count", uint32(tinyLayer)},
		{"llama.feed_forward_length", uint32(tinyFF)},
		{"llama.attention.head_count", uint32(tinyHeads)},
		{"llama.attention.head_count_kv", uint32(tinyHeads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.dimension_count", uint32(tinyEmbd / tinyHeads)},
		{"llama.vocab_size", uint32(nv)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(TokBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokImEnd)},
		{"tokenizer.ggml.unknown_token_id", uint32(TokUnk)},
		{"tokenizer.ggml.add_bos_token", true},
	}
	if tm.Template != "" {
		kvs = append(kvs, KV{"tokenizer.chat_template", tm.Template})
	}
	if err := WriteGGUF(path, kvs, ts); err != nil {
		t.Fatal(err)
	}
}
