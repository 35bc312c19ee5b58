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
