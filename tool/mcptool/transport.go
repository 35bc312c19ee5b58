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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// transport makes the transport of one connection attempt, and for a
// stdio server the log of its stderr, whose last lines explain a server
// that exits while starting.
func (s *Server) transport(ctx context.Context) (mcp.Transport, *lineLogger, error) {
	switch {
	case s.cfg.Dial != nil:
		t, err := s.cfg.Dial(ctx)
		return t, nil, err
	case s.cfg.Command != "":
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = commandEnv(s.cfg.Env, s.cfg.InheritEnv, os.LookupEnv)
		cmd.Dir = s.cfg.Dir
		stderr := &lineLogger{log: s.log}
		cmd.Stderr = stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateWait}, stderr, nil
	default:
		client, err := httpClient(s.cfg)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}, nil, nil
	}
}

// defaultEnv is what a stdio server inherits whatever the configuration
// says: the minimal environment the official MCP SDKs give their servers,
// without which "npx …" servers cannot start. No secrets are among it.
var defaultEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// commandEnv builds a stdio server's environment: defaultEnv and the
// inherited names that are set in ours, then env over them. Never nil, so
// nothing else leaks in (exec.Cmd inherits everything when Env is nil).
func commandEnv(env map[string]string, inherit []string, lookup func(string) (string, bool)) []string {
	vars := map[string]string{}
	for _, k := range append(slices.Clone(defaultEnv), inherit...) {
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
	log  *slog.Logger
	mu   sync.Mutex
	buf  []byte
	last []string // the last stderrTail lines
}

// stderrTail is how many of a server's last stderr lines a failed start
// reports.
const stderrTail = 5

// tail returns the last lines the server wrote to stderr, joined.
func (l *lineLogger) tail() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.last
	if len(l.buf) > 0 {
		lines = append(slices.Clone(lines), string(l.buf))
	}
	return strings.Join(lines, " | ")
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
	if l.last = append(l.last, string(line)); len(l.last) > stderrTail {
		l.last = l.last[len(l.last)-stderrTail:]
	}
	l.log.Debug("mcp server stderr", "line", string(line))
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
