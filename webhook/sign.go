// Package webhook delivers an agent's events to the receivers that asked
// for them (SPEC §20): from the store's outbox, at least once, signed per
// the Standard Webhooks spec, retried with exponential backoff and jitter,
// never to an inward address unless allowed. A Service is the webhooks
// API of one agent.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
)

// SecretPrefix starts every signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: the prefix and 32 random bytes
// in base64.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// key decodes a secret's key; errors are EInvalid.
func key(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(k) < 16 || len(k) > 64 {
		return nil, agentik.Errorf(agentik.EInvalid, "a webhook secret is %s and 16 to 64 bytes in base64", SecretPrefix)
	}
	return k, nil
}

// ValidSecret checks a secret given in the config file.
func ValidSecret(secret string) error {
	_, err := key(secret)
	return err
}

// Sign returns the webhook-signature header of a delivery: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body" under the secret's key.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	k, err := key(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Verify checks a delivery as a receiver does: one of the space-separated
// signatures of header is v1 and matches, and the timestamp is within
// tolerance of now. It is what the tests use to check deliveries.
func Verify(secret, id, timestamp, header string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return agentik.Errorf(agentik.EInvalid, "bad webhook-timestamp %q", timestamp)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return agentik.Errorf(agentik.EInvalid, "webhook-timestamp %s is too far from now", ts)
	}
	want, err := Sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(header) {
		if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1 {
			return nil
		}
	}
	return agentik.Errorf(agentik.EInvalid, "no valid signature")
}
