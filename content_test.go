package agentik_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/agentik/agentik"
)

// testImages encodes a real 2×2 picture in each format the standard library
// writes; WebP has no encoder there, so its file is a valid VP8L header.
func testImages(t testing.TB) map[string][]byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	out := map[string][]byte{}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	out["image/png"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	out["image/jpeg"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	out["image/gif"] = append([]byte(nil), b.Bytes()...)
	out["image/webp"] = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	return out
}

func TestValidateImage(t *testing.T) {
	imgs := testImages(t)
	for mime, raw := range imgs {
		if got := agentik.SniffImage(raw); got != mime {
			t.Errorf("sniff %s: got %q", mime, got)
		}
		if err := agentik.Image(mime, raw).ValidateImage(0); err != nil {
			t.Errorf("%s: %v", mime, err)
		}
	}
	pngRaw := imgs["image/png"]
	cases := []struct {
		name string
		c    agentik.Content
		max  int
		code string
	}{
		{"wrong mime for the header", agentik.Image("image/jpeg", pngRaw), 0, agentik.EInvalid},
		{"not an image", agentik.Image("image/png", []byte("hello, not a picture")), 0, agentik.EInvalid},
		{"truncated header", agentik.Image("image/png", pngRaw[:4]), 0, agentik.EInvalid},
		{"riff but not webp", agentik.Image("image/webp", []byte("RIFF\x00\x00\x00\x00WAVEfmt ")), 0, agentik.EInvalid},
		{"mime not allowed", agentik.Image("image/svg+xml", []byte("<svg/>")), 0, agentik.EInvalid},
		{"bad base64", agentik.Content{Type: agentik.ContentImage, MIME: "image/png", Data: "%%%%"}, 0, agentik.EInvalid},
		{"empty", agentik.Content{Type: agentik.ContentImage, MIME: "image/png"}, 0, agentik.EInvalid},
		{"over the limit", agentik.Image("image/png", pngRaw), len(pngRaw) - 1, agentik.ETooLarge},
		{"text part", agentik.Text("x"), 0, agentik.EInvalid},
	}
	for _, tc := range cases {
		err := tc.c.ValidateImage(tc.max)
		if got := agentik.ErrorCode(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.code)
		}
	}
	if err := agentik.Image("image/png", pngRaw).ValidateImage(len(pngRaw)); err != nil {
		t.Errorf("exactly at the limit: %v", err)
	}
	// A huge body is refused by its length, before it is decoded.
	huge := agentik.Content{Type: agentik.ContentImage, MIME: "image/png", Data: base64.StdEncoding.EncodeToString(make([]byte, 3<<20))}
	if agentik.ErrorCode(huge.ValidateImage(1<<20)) != agentik.ETooLarge {
		t.Error("a 3 MiB image passed a 1 MiB limit")
	}

	if err := agentik.ValidateInput([]agentik.Content{agentik.Text("look"), agentik.Image("image/gif", imgs["image/gif"])}, 0); err != nil {
		t.Errorf("valid input: %v", err)
	}
	if agentik.ValidateInput([]agentik.Content{agentik.Text("look"), agentik.Image("image/gif", pngRaw)}, 0) == nil {
		t.Error("input with a mislabelled image passed")
	}
	if agentik.ValidateInput(nil, 0) == nil {
		t.Error("empty input passed")
	}
}

// FuzzValidateImage feeds arbitrary bytes and MIME types: validation never
// panics, and an accepted image always sniffs as its declared MIME.
func FuzzValidateImage(f *testing.F) {
	for mime, raw := range testImages(f) {
		f.Add(mime, raw)
	}
	f.Add("image/png", []byte("\x89PNG"))
	f.Add("image/webp", []byte("RIFF\x00\x00\x00\x00WEBP"))
	f.Add("image/jpeg", []byte{0xff, 0xd8})
	f.Fuzz(func(t *testing.T, mime string, raw []byte) {
		c := agentik.Image(mime, raw)
		err := c.ValidateImage(1 << 16)
		if err == nil && agentik.SniffImage(raw) != mime {
			t.Fatalf("accepted %q whose header sniffs as %q", mime, agentik.SniffImage(raw))
		}
		if err == nil && len(raw) > 1<<16 {
			t.Fatalf("accepted %d bytes over the limit", len(raw))
		}
	})
}
