package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Bounds of the embeddings client.
const (
	// EmbedBatch is how many texts one request to the endpoint carries.
	EmbedBatch = 32
	// EmbedTimeout bounds one request of the background worker.
	EmbedTimeout = 30 * time.Second
	// QueryEmbedTimeout bounds the embedding of a search's query, which a
	// caller waits for: past it, the search answers by words alone.
	QueryEmbedTimeout = 5 * time.Second
	// EmbedTries is how many times the worker sends a batch the endpoint
	// answered with 429, 5xx or a broken connection, backing off in
	// between (doubling from half a second, or the Retry-After asked for,
	// at most 30 s).
	EmbedTries = 4
	// maxEmbedResponse bounds the body of an answer read.
	maxEmbedResponse = 64 << 20
)

// errRefused is an answer of the endpoint that sending the same texts
// again cannot change: a 4xx other than 408 and 429.
var errRefused = errors.New("the embeddings endpoint refused the texts")

// Embedder is a client of an OpenAI-compatible POST {base_url}/embeddings
// endpoint. Safe for concurrent use.
type Embedder struct {
	url, model, key string
	client          *http.Client
}

// NewEmbedder returns the client of the endpoint at baseURL (ending in
// /v1, say) for model, with apiKey as the bearer token ("" sends none).
// client nil is http.DefaultClient.
func NewEmbedder(baseURL, model, apiKey string, client *http.Client) *Embedder {
	if client == nil {
		client = http.DefaultClient
	}
	return &Embedder{url: baseURL + "/embeddings", model: model, key: apiKey, client: client}
}

// Model is the name of the model the embedder asks for.
func (e *Embedder) Model() string { return e.model }

// Embed returns the vectors of texts, in their order: one request, tried
// up to tries times (at least once) while the endpoint answers 429, 5xx
// or the connection breaks, each try within timeout. An error wrapping
// errRefused is final for these texts.
func (e *Embedder) Embed(ctx context.Context, texts []string, tries int, timeout time.Duration) ([][]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.model, "input": texts, "encoding_format": "float"})
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		vecs, wait, err := e.post(ctx, body, len(texts), timeout)
		if err == nil || errors.Is(err, errRefused) || try >= tries {
			return vecs, err
		}
		if wait == 0 {
			wait = time.Duration(float64(250*time.Millisecond<<try) * (0.5 + rand.Float64()/2))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(wait, 30*time.Second)):
		}
	}
}

// post sends one request and reads its answer; wait is the Retry-After
// the endpoint asked for, if any.
func (e *Embedder) post(ctx context.Context, body []byte, n int, timeout time.Duration) ([][]float32, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedResponse))
	if err != nil {
		return nil, 0, fmt.Errorf("embeddings: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("embeddings: %s: %.200s", resp.Status, raw)
		if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
			err = fmt.Errorf("%w: %w", errRefused, err)
		}
		return nil, retryAfter(resp.Header.Get("Retry-After")), err
	}
	vecs, err := decodeEmbeddings(raw, n)
	return vecs, 0, err
}

// decodeEmbeddings reads the data of an answer for n texts: one vector
// for each index 0 to n-1.
func decodeEmbeddings(raw []byte, n int) ([][]float32, error) {
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("embeddings: the answer is not an embeddings list: %w", err)
	}
	vecs := make([][]float32, n)
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= n || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: the answer has an embedding at index %d of %d texts", d.Index, n)
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("embeddings: the answer has no embedding for text %d", i)
		}
	}
	return vecs, nil
}

// retryAfter reads a Retry-After of seconds (0 when none).
func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(h); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
