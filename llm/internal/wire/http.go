package wire

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// NewHTTPClient returns a new client for provider calls: the default
// transport's settings, with a connection pool sized for concurrent calls
// (up to 512 idle connections, 128 per host, kept for 90 seconds), so
// that they reuse connections instead of redialing. Each provider package
// makes one and shares it among its providers. It is safe for concurrent
// use, and so is the client.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 128
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// Send sends an API request. When the client adds nothing of its own — no
// cookie jar, no overall timeout, no redirect policy — it goes through the
// client's transport directly: an API call follows no redirects, so what
// Client.Do adds for them (a copy of the headers per request, the redirect
// loop) is work for nothing. A transport error then arrives as the
// transport returned it, not wrapped in a *url.Error.
func Send(c *http.Client, req *http.Request) (*http.Response, error) {
	if c.Jar != nil || c.Timeout != 0 || c.CheckRedirect != nil {
		return c.Do(req)
	}
	t := c.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	return t.RoundTrip(req)
}

// StripSDKHeaders is an SDK middleware (option.WithMiddleware in both
// openai-go and anthropic-sdk-go) that removes the X-Stainless-* headers,
// which report the platform, runtime and retry state to the server, before
// calling next. It is safe for concurrent use.
func StripSDKHeaders(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	for k := range req.Header {
		if len(k) > 12 && strings.EqualFold(k[:12], "X-Stainless-") {
			delete(req.Header, k)
		}
	}
	return next(req)
}

// ValidBaseURL reports whether s is an absolute http or https URL with a
// host, as an API root must be. It is safe for concurrent use.
func ValidBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
