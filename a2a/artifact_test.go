package a2a

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// joinedByConcat is how streamed artifacts were merged before
// artifactText: the same result, with += on the last part's text.
func joinedByConcat(as []Artifact, u *ArtifactUpdate) []Artifact {
	for i := range as {
		if as[i].ID == u.Artifact.ID {
			if u.Append {
				ps := as[i].Parts
				for _, p := range u.Artifact.Parts {
					if n := len(ps); n > 0 && p.Kind == "text" && ps[n-1].Kind == "text" {
						ps[n-1].Text += p.Text
						continue
					}
					ps = append(ps, p)
				}
				as[i].Parts = ps
			} else {
				as[i] = u.Artifact
			}
			return as
		}
	}
	return append(as, u.Artifact)
}

func clonedUpdate(u *ArtifactUpdate) *ArtifactUpdate {
	c := *u
	c.Artifact.Parts = append([]Part(nil), u.Artifact.Parts...)
	return &c
}

// TestArtifactTextMatchesConcat: random streams of appends, replacements
// and new artifacts of text and other parts give the artifacts that
// joining with += gave.
func TestArtifactTextMatchesConcat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"a", "b", "c"}
	for round := range 500 {
		var want, got []Artifact
		var arts artifactText
		if round%2 == 1 { // a task that came with two artifacts of one id
			want = []Artifact{{ID: "a", Parts: []Part{TextPart("x")}}, {ID: "a", Parts: []Part{TextPart("y")}}}
			got = []Artifact{{ID: "a", Parts: []Part{TextPart("x")}}, {ID: "a", Parts: []Part{TextPart("y")}}}
		}
		var log []string
		for range rng.IntN(30) {
			u := &ArtifactUpdate{Artifact: Artifact{ID: ids[rng.IntN(len(ids))]}, Append: rng.IntN(4) > 0}
			for range rng.IntN(4) {
				if rng.IntN(4) == 0 {
					u.Artifact.Parts = append(u.Artifact.Parts, Part{Kind: "url", URL: "u"})
				} else {
					u.Artifact.Parts = append(u.Artifact.Parts, TextPart(string(rune('p'+rng.IntN(5)))))
				}
			}
			log = append(log, u.Artifact.ID)
			want = joinedByConcat(want, clonedUpdate(u))
			got = arts.merge(got, clonedUpdate(u))
			if rng.IntN(5) == 0 { // read mid-stream, as a return does
				arts.flush(got)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d after %v:\n got %+v\nwant %+v", round, log, got, want)
				}
			}
		}
		arts.flush(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d after %v:\n got %+v\nwant %+v", round, log, got, want)
		}
	}
}

// TestArtifactTextLinear: 20,000 one-word chunks appended to one artifact
// allocate a few times the text, not the 2n² bytes (about 1 GB) of
// copying the text so far at every chunk.
func TestArtifactTextLinear(t *testing.T) {
	const n = 20_000
	var arts artifactText
	as := []Artifact{{ID: "a", Parts: []Part{TextPart("")}}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		as = arts.merge(as, &ArtifactUpdate{Artifact: Artifact{ID: "a", Parts: []Part{TextPart("word ")}}, Append: true})
	}
	arts.flush(as)
	runtime.ReadMemStats(&after)
	if got := as[0].Parts[0].Text; got != strings.Repeat("word ", n) {
		t.Fatalf("text of %d bytes", len(got))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("%d chunks allocated %d bytes", n, alloc)
	}
}

// TestStreamedTextOfAReplacedTask: text streamed into an artifact before
// the stream sent a new task is not written into the new task's artifact
// of the same id (a real stream, through Client.Send).
func TestStreamedTextOfAReplacedTask(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"name":"x","url":%q,"capabilities":{"streaming":true}}`, srv.URL+"/a2a")
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"old"}]}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":" stale"}]},"append":true}`,
			`{"kind":"task","id":"t","contextId":"c","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"new"}]}]}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"b","parts":[{"kind":"text","text":"b1"}]}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"b","parts":[{"kind":"text","text":" b2"}]},"append":true}`,
			`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`,
		} {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", req.ID, ev)
		}
	}))
	defer srv.Close()
	c, err := Dial(t.Context(), srv.URL, "", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Send(t.Context(), &Message{ID: "m", Role: "user", Parts: []Part{TextPart("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	task, ok := out.(*Task)
	if !ok {
		t.Fatalf("result %T", out)
	}
	got := map[string]string{}
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			got[a.ID] += p.Text + "|"
		}
	}
	if got["a"] != "new|" || got["b"] != "b1 b2|" || len(got) != 2 {
		t.Fatalf("artifacts %q", got)
	}
}
