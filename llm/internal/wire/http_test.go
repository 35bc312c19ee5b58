package wire

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewHTTPClient(t *testing.T) {
	c := NewHTTPClient()
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T, want *http.Transport", c.Transport)
	}
	if tr == http.DefaultTransport {
		t.Errorf("the client uses http.DefaultTransport itself, want a clone")
	}
	if tr.MaxIdleConns != 512 || tr.MaxIdleConnsPerHost != 128 || tr.IdleConnTimeout != 90*time.Second {
		t.Errorf("pool: %d idle, %d per host, %v; want 512, 128, 90s", tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.IdleConnTimeout)
	}
	if tr.Proxy == nil || !tr.ForceAttemptHTTP2 {
		t.Errorf("default transport settings lost (proxy from environment, HTTP/2)")
	}
	if c.Timeout != 0 {
		t.Errorf("client timeout %v, want none: calls are bounded by their context", c.Timeout)
	}
	if c2 := NewHTTPClient(); c2 == c || c2.Transport == c.Transport {
		t.Errorf("two calls share a client or transport")
	}
}

func TestStripSDKHeaders(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   []string // header names left, sorted
	}{
		{"none", http.Header{}, nil},
		{"SDK headers only", http.Header{"X-Stainless-Os": {"Linux"}, "X-Stainless-Retry-Count": {"0"}}, nil},
		{"other case", http.Header{"x-stainless-arch": {"x64"}, "X-STAINLESS-LANG": {"go"}}, nil},
		{"others kept", http.Header{"X-Stainless-Runtime": {"go"}, "Authorization": {"Bearer k"}, "X-Api-Key": {"k"}},
			[]string{"Authorization", "X-Api-Key"}},
		{"prefix alone is not one", http.Header{"X-Stainless-": {"x"}, "X-Stainless": {"y"}}, []string{"X-Stainless", "X-Stainless-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://example.com/v1", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tt.header
			want := &http.Response{StatusCode: 204}
			errNext := errors.New("from next")
			var seen *http.Request
			got, err := StripSDKHeaders(req, func(r *http.Request) (*http.Response, error) {
				seen = r
				return want, errNext
			})
			if seen != req || got != want || err != errNext {
				t.Errorf("next not called with the request, or its answer not passed on")
			}
			var left []string
			for k := range req.Header {
				left = append(left, k)
			}
			slices.Sort(left)
			if !slices.Equal(left, tt.want) {
				t.Errorf("headers left %v, want %v", left, tt.want)
			}
		})
	}
}

func TestValidBaseURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.openai.com/v1", true},
		{"http://127.0.0.1:11434/v1", true},
		{"HTTPS://example.com", true},
		{"", false},
		{"/v1", false},
		{"api.openai.com/v1", false},
		{"ftp://example.com", false},
		{"https://", false},
		{"https:///v1", false},
		{"http://[::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := ValidBaseURL(tt.url); got != tt.want {
				t.Errorf("ValidBaseURL(%q) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
}

// TestSend: a plain client's request goes to its transport as it is — no
// redirect followed, the headers not copied — while a client with a
// policy of its own (here a redirect check) is used as a client.
func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("X-Auth-Seen", r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	header := http.Header{"Authorization": {"Bearer k"}}
	send := func(c *http.Client) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/old", strings.NewReader("{}"))
		req.Header = header
		resp, err := Send(c, req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := send(&http.Client{}); resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("plain client: status %d, want the redirect itself", resp.StatusCode)
	}
	followed := 0
	policy := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { followed++; return nil }}
	if resp := send(policy); resp.StatusCode != http.StatusOK || followed != 1 || resp.Header.Get("X-Auth-Seen") != "Bearer k" {
		t.Errorf("client with a redirect policy: status %d, followed %d, auth %q", resp.StatusCode, followed, resp.Header.Get("X-Auth-Seen"))
	}
	if len(header) != 1 || header.Get("Authorization") != "Bearer k" {
		t.Errorf("the shared headers were changed: %v", header)
	}
}
