package mcptool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/mcptool"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

func TestNoCapabilitiesDeclared(t *testing.T) {
	f := newFake(t)
	connect(t, f, mcptool.ServerConfig{Policy: trustedPolicy})
	p := f.lastSession().InitializeParams()
	if p == nil || p.Capabilities == nil {
		t.Fatal("no initialize params")
	}
	c := p.Capabilities
	if c.Sampling != nil || c.Elicitation != nil || c.RootsV2 != nil || c.Roots.ListChanged || len(c.Experimental) > 0 || len(c.Extensions) > 0 {
		t.Errorf("declared capabilities: %+v", c)
	}
}

func TestStreamableHTTPHeadersAndRedirects(t *testing.T) {
	f := newFake(t)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, nil)
	var mu sync.Mutex
	seen := map[string]string{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["auth"] = r.Header.Get("Authorization")
		seen["key"] = r.Header.Get("X-Api-Key")
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := mcptool.Connect(ctx, mcptool.ServerConfig{Name: "web", URL: ts.URL, BearerToken: "tok-123",
		Headers: map[string]string{"X-Api-Key": "key-456"}, Policy: trustedPolicy, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := call(t, toolsByName(s)["web.echo"], `{"message":"over http"}`)
	if res.Status != tool.StatusOK || res.Text != "Echo: over http" {
		t.Fatalf("echo over http = %+v", res)
	}
	mu.Lock()
	if seen["auth"] != "Bearer tok-123" || seen["key"] != "key-456" {
		t.Errorf("headers seen = %v", seen)
	}
	mu.Unlock()
	if res := call(t, toolsByName(s)["web.steps"], `{}`); len(tooltest.Data[data](t, res).Progress) == 0 {
		t.Errorf("no progress over http: %s", res.Data)
	}

	// A redirect is not followed: the headers never reach another host.
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		handler.ServeHTTP(w, r)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if s2, err := mcptool.Connect(ctx2, mcptool.ServerConfig{Name: "redir", URL: redirector.URL, BearerToken: "tok-123",
		Policy: trustedPolicy, Logger: quiet}); err == nil {
		s2.Close()
		t.Error("connected through a redirect")
	}
	if reached.Load() != 0 {
		t.Error("a redirect was followed")
	}
}
