package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentik/agentik"
)

// ErrInward refuses a connection to an inward address.
var ErrInward = errors.New("the target resolves to a loopback, private, link-local or metadata address")

var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT; Alibaba's metadata is 100.100.100.200
	thisNet     = netip.MustParsePrefix("0.0.0.0/8")
	ietf        = netip.MustParsePrefix("192.0.0.0/24")
	benchmark   = netip.MustParsePrefix("198.18.0.0/15")
)

// Inward reports whether ip is an address a webhook must not reach:
// loopback, private, link-local (169.254.169.254, the cloud metadata
// address, among them), unspecified, multicast, shared or reserved space.
func Inward(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		sharedSpace.Contains(ip) || thisNet.Contains(ip) || ietf.Contains(ip) || benchmark.Contains(ip) ||
		ip == netip.MustParseAddr("255.255.255.255")
}

// guard is the dialer's Control: it runs after DNS, on the address
// actually dialled, so a name that resolves inward (now, or only at
// delivery time) is refused.
func guard(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return ErrInward
	}
	if Inward(ap.Addr()) {
		return ErrInward
	}
	return nil
}

// NewClient returns the HTTP client of deliveries: each attempt bounded by
// timeout, redirects not followed (a 3xx is an answer, not a 2xx), no
// proxy from the environment, and, unless allowPrivate, no connection to
// an inward address.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = guard
	}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL checks a webhook's URL when it is made: absolute http(s), no
// credentials in it, and, unless allowPrivate, not a name or address
// that resolves inward now (delivery checks again). Errors are EInvalid.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) error {
	if len(raw) > 2048 {
		return agentik.Errorf(agentik.EInvalid, "url: longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return agentik.Errorf(agentik.EInvalid, "url: want an absolute http or https URL")
	}
	if u.User != nil {
		return agentik.Errorf(agentik.EInvalid, "url: credentials in the URL are not taken")
	}
	if allowPrivate {
		return nil
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if Inward(ip) {
			return agentik.Errorf(agentik.EInvalid, "url: %s is an inward address (set AGENTIK_WEBHOOK_ALLOW_PRIVATE=on to allow it)", host)
		}
		return nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return agentik.Errorf(agentik.EInvalid, "url: %s is an inward address (set AGENTIK_WEBHOOK_ALLOW_PRIVATE=on to allow it)", host)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil // not resolvable now: delivery checks again
	}
	for _, ip := range ips {
		if Inward(ip) {
			return agentik.Errorf(agentik.EInvalid, "url: %s resolves to an inward address (set AGENTIK_WEBHOOK_ALLOW_PRIVATE=on to allow it)", host)
		}
	}
	return nil
}
