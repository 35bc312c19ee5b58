package mcptool

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateWait is how long a stdio server gets between the closing of its
// stdin and SIGTERM (and again before SIGKILL).
const terminateWait = 2 * time.Second

// reservedHeaders are set by the transport and may not be configured.
var reservedHeaders = map[string]bool{
	"Accept":               true,
	"Content-Type":         true,
	"Content-Length":       true,
	"Host":                 true,
	"Connection":           true,
	"Transfer-Encoding":    true,
	"Mcp-Session-Id":       true,
	"Mcp-Protocol-Version": true,
	"Last-Event-Id":        true,
}

// transport makes the transport of one connection attempt.
func (s *Server) transport(ctx context.Context) (mcp.Transport, error) {
	switch {
	case s.cfg.Dial != nil:
		return s.cfg.Dial(ctx)
	case s.cfg.Command != "":
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = commandEnv(s.cfg.Env, s.cfg.InheritEnv, os.LookupEnv)
		cmd.Dir = s.cfg.Dir
		cmd.Stderr = &lineLogger{log: s.log}
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateWait}, nil
	default:
		client, err := httpClient(s.cfg)
		if err != nil {
			return nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}, nil
	}
}

// commandEnv builds a stdio server's environment: the inherited names that
// are set in ours, then env over them. Never nil, so nothing else leaks
// in (exec.Cmd inherits everything when Env is nil).
func commandEnv(env map[string]string, inherit []string, lookup func(string) (string, bool)) []string {
	vars := map[string]string{}
	for _, k := range inherit {
		if v, ok := lookup(k); ok {
			vars[k] = v
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// checkEndpoint accepts absolute http(s) URLs without user credentials;
// an Authorization header travels only over https or to a loopback
// address.
func checkEndpoint(raw string, auth bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url must be absolute http or https")
	}
	if u.User != nil {
		return fmt.Errorf("url must not carry credentials; use headers or a bearer token")
	}
	if auth && u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("a bearer token or Authorization header is only sent over https or to a loopback address")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var sharedHTTP = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	MaxIdleConns:        100,
	MaxIdleConnsPerHost: 32,
	IdleConnTimeout:     90 * time.Second,
	ForceAttemptHTTP2:   true,
}}

// httpClient returns a client that adds the configured headers and never
// follows redirects (the headers would travel to the new location).
func httpClient(cfg ServerConfig) (*http.Client, error) {
	h := http.Header{}
	for k, v := range cfg.Headers {
		ck := http.CanonicalHeaderKey(k)
		if reservedHeaders[ck] || (ck == "Authorization" && cfg.BearerToken != "") {
			return nil, fmt.Errorf("header %s is set by the transport", ck)
		}
		h.Set(ck, v)
	}
	if cfg.BearerToken != "" {
		h.Set("Authorization", "Bearer "+cfg.BearerToken)
	}
	base := cfg.HTTPClient
	if base == nil {
		base = sharedHTTP
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &headerTransport{base: rt, headers: h}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// lineLogger logs a stdio server's stderr line by line at debug level,
// each line cut to 512 bytes.
type lineLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	if len(line) > 512 {
		line = line[:512]
	}
	l.log.Debug("mcp server stderr", "line", string(line))
}
