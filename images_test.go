package agentik

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// restoreFrom is how a store reads images back: hash → base64.
func restoreFrom(b *ImageBlobs) map[string]string {
	data := map[string]string{}
	for _, h := range b.Hashes() {
		data[h] = base64.StdEncoding.EncodeToString(b.Bytes(h))
	}
	return data
}

func TestExtractImagesNone(t *testing.T) {
	var b ImageBlobs
	parts := []Content{Text("hi"), Text("there")}
	var stored []Content
	var refs string
	allocs := testing.AllocsPerRun(100, func() { stored, refs = b.Extract(parts) })
	if allocs != 0 || refs != "" || &stored[0] != &parts[0] || b.Len() != 0 {
		t.Fatalf("text only: %v allocs, refs %q, copied %v", allocs, refs, &stored[0] != &parts[0])
	}
	if err := RestoreImages(stored, refs, nil); err != nil {
		t.Fatal(err)
	}
}

func TestExtractRestoreImages(t *testing.T) {
	png := Image("image/png", []byte("\x89PNG\r\n\x1a\nfirst"))
	jpeg := Image("image/jpeg", []byte{0xff, 0xd8, 0xff, 1, 2, 3})
	wrapped := png
	wrapped.Data = png.Data[:4] + "\n" + png.Data[4:]
	odd := Content{Type: ContentImage, MIME: "image/png", Data: "not base64!"}
	empty := Content{Type: ContentImage, MIME: "image/png"}
	parts := []Content{Text("a"), png, wrapped, jpeg, odd, png, empty}
	orig := slices.Clone(parts)

	var b ImageBlobs
	stored, refs := b.Extract(parts)
	if !reflect.DeepEqual(parts, orig) {
		t.Fatal("Extract changed its argument")
	}
	hash := func(c Content) string {
		raw, _ := base64.StdEncoding.DecodeString(c.Data)
		s := sha256.Sum256(raw)
		return hex.EncodeToString(s[:])
	}
	if want := strings.Join([]string{hash(png), "", hash(jpeg), "", hash(png), ""}, ","); refs != want {
		t.Fatalf("refs %q, want %q", refs, want)
	}
	for i, p := range stored {
		want := parts[i]
		if i == 1 || i == 3 || i == 5 {
			want.Data = "" // moved out
		}
		if p != want {
			t.Fatalf("stored part %d: %+v, want %+v", i, p, want)
		}
	}
	if b.Len() != 2 || !slices.IsSorted(b.Hashes()) || string(b.Bytes(hash(jpeg))) != "\xff\xd8\xff\x01\x02\x03" {
		t.Fatalf("blobs: %d, %v", b.Len(), b.Hashes())
	}
	// The same data again (the memory entry of the same message) is not
	// decoded twice and gives the same references.
	if _, again := b.Extract([]Content{jpeg}); again != hash(jpeg) || b.Len() != 2 {
		t.Fatalf("second extract: %q", again)
	}

	if err := RestoreImages(stored, refs, restoreFrom(&b)); err != nil {
		t.Fatalf("RestoreImages: %v", err)
	}
	if !reflect.DeepEqual(stored, orig) {
		t.Fatalf("restored %+v\nwant %+v", stored, orig)
	}
}

func TestRestoreImagesErrors(t *testing.T) {
	png := Image("image/png", []byte("\x89PNG\r\n\x1a\n"))
	var b ImageBlobs
	stored, refs := b.Extract([]Content{png})
	data := restoreFrom(&b)
	for _, tc := range []struct {
		name  string
		parts []Content
		refs  string
		data  map[string]string
		want  error
	}{
		{"fewer references", []Content{{Type: ContentImage}, {Type: ContentImage}}, refs, data, nil},
		{"more references", slices.Clone(stored), refs + ",", data, nil},
		{"no image", []Content{Text("x")}, refs, data, nil},
		{"missing", slices.Clone(stored), refs, map[string]string{}, ErrImageMissing},
	} {
		err := RestoreImages(tc.parts, tc.refs, tc.data)
		if ErrorCode(err) != EInternal || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestImageRefs(t *testing.T) {
	got := map[string]bool{}
	ImageRefs("a,,b,a,", got)
	if len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("ImageRefs: %v", got)
	}
}

// FuzzImagesRoundTrip: whatever image parts hold, extracting and restoring
// gives them back exactly, and extracted parts hold no data.
func FuzzImagesRoundTrip(f *testing.F) {
	f.Add("aGVsbG8=", "aGVsbG8=", "x")
	f.Add("aGVsbG8", "aGVs\nbG8=", "")
	f.Add("", "QR==", "sha256:00")
	f.Add("////", "+/+/", "aGk=")
	f.Fuzz(func(t *testing.T, d1, d2, text string) {
		parts := []Content{
			{Type: ContentImage, MIME: "image/png", Data: d1},
			{Type: ContentText, Text: text},
			{Type: ContentImage, MIME: "image/gif", Data: d2},
			{Type: ContentImage, MIME: "image/png", Data: d1},
		}
		orig := slices.Clone(parts)
		var b ImageBlobs
		stored, refs := b.Extract(parts)
		if !reflect.DeepEqual(parts, orig) {
			t.Fatal("Extract changed its argument")
		}
		if refs != "" {
			hs := strings.Split(refs, ",")
			if len(hs) != 3 {
				t.Fatalf("refs %q for 3 images", refs)
			}
			for i, j := range []int{0, 2, 3} {
				if hs[i] != "" && stored[j].Data != "" {
					t.Fatalf("part %d extracted but kept its data", j)
				}
			}
		}
		if err := RestoreImages(stored, refs, restoreFrom(&b)); err != nil {
			t.Fatalf("RestoreImages: %v", err)
		}
		if !reflect.DeepEqual(stored, orig) {
			t.Fatalf("round trip: %+v, want %+v", stored, orig)
		}
	})
}
