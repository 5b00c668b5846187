package webhook

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	secret := NewSecret()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"turn.completed"}`)
	sig, err := Sign(secret, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	if err := Verify(secret, "msg_1", ts, "v1,bogus "+sig, body, now, time.Minute); err != nil {
		t.Fatalf("verify: %v", err)
	}
	for name, c := range map[string]struct {
		secret, id, ts string
		body           []byte
		now            time.Time
	}{
		"other secret": {NewSecret(), "msg_1", ts, body, now},
		"other id":     {secret, "msg_2", ts, body, now},
		"other body":   {secret, "msg_1", ts, []byte(`{}`), now},
		"other time":   {secret, "msg_1", strconv.FormatInt(now.Unix()+1, 10), body, now},
		"too old":      {secret, "msg_1", ts, body, now.Add(10 * time.Minute)},
		"bad time":     {secret, "msg_1", "soon", body, now},
	} {
		if err := Verify(c.secret, c.id, c.ts, sig, c.body, c.now, 5*time.Minute); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := Sign("whsec_short", "id", now, body); err == nil {
		t.Error("a short key signs")
	}
}

// TestSignKnownValue pins the signature to the Standard Webhooks scheme,
// computed independently: HMAC-SHA256 of "id.timestamp.body" with the
// base64 key after whsec_ (openssl dgst -sha256 -hmac over the same bytes).
func TestSignKnownValue(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sig, err := Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
}

func TestInward(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "::1", "10.0.0.1", "172.16.3.4", "192.168.1.1", "169.254.169.254", "fe80::1",
		"fd00:ec2::254", "100.100.100.200", "0.0.0.0", "::", "::ffff:127.0.0.1", "224.0.0.1", "255.255.255.255"} {
		if !Inward(netip.MustParseAddr(s)) {
			t.Errorf("%s is not inward", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.216.34"} {
		if Inward(netip.MustParseAddr(s)) {
			t.Errorf("%s is inward", s)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"ftp://example.com", "example.com/x", "http://", "http://user:pw@example.com/", "http://127.0.0.1/x",
		"http://localhost:8080/", "http://[::1]/", "http://169.254.169.254/", "http://foo.localhost/"} {
		if CheckURL(ctx, u, false) == nil {
			t.Errorf("%s passes", u)
		}
	}
	if err := CheckURL(ctx, "http://127.0.0.1:9/x", true); err != nil {
		t.Errorf("allowed private: %v", err)
	}
	if err := CheckURL(ctx, "https://93.184.216.34/hook", false); err != nil {
		t.Errorf("public address: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	d := &Deliverer{opts: Options{FirstRetry: time.Second, MaxBackoff: time.Minute}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: time.Minute, 100: time.Minute} {
		for range 50 {
			if got := d.backoff(n); got < want/2 || got > want {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", n, got, want/2, want)
			}
		}
	}
}
