package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testAPIKey     = "sk-test-0123456789abcdef"
	testToolSecret = "tool-secret-xyz"
	testCookie     = "cookievalue123"
	testCustomTok  = "tok-abcdefghijkl"
)

// fakeProvider is a loopback server with the endpoints the tests record.
// It fails the test (via bad) when a request did not arrive unchanged.
type fakeProvider struct {
	*httptest.Server
	mu  sync.Mutex
	bad []string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		f.checkAuth(r)
		var in struct{ Prompt string }
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &in); err != nil {
			f.fail("chat body %q: %v", body, err)
		}
		w.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "echo": in.Prompt, "len": len(body)})
		w.Write(out)
	})
	mux.HandleFunc("POST /v1/pretty", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{\n  \"id\": \"chatcmpl-2\",\n  \"choices\": [\n    {\n      \"index\": 0,\n      \"text\": \"a <b> & c\"\n    }\n  ],\n  \"empty\": []\n}\n")
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") != testAPIKey || r.URL.Query().Get("limit") != "5" {
			f.fail("models query %q", r.URL.RawQuery)
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "models: a, b\n")
	})
	mux.HandleFunc("POST /v1/limited", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	})
	mux.HandleFunc("GET /v1/secret-echo", func(w http.ResponseWriter, r *http.Request) {
		f.checkAuth(r)
		w.Header().Set("Set-Cookie", "session=abcdefgh12345; HttpOnly")
		w.Header().Set("X-Session-Token", "sessiontoken-999")
		w.Header().Set("X-Echo", "key was "+testAPIKey)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"note":"your key is %s","tool":%q}`, testAPIKey, testToolSecret)
	})
	mux.HandleFunc("GET /v1/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte{0xff, 0x00, 0xfe, 'x'})
	})
	mux.HandleFunc("GET /v1/long", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789", 100))
	})
	mux.HandleFunc("POST /v1/reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("POST /v1/truncated", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\npartial")
		buf.Flush()
		conn.Close()
	})
	mux.HandleFunc("POST /v1/slow", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server notices the client going away
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bad = append(f.bad, fmt.Sprintf(format, args...))
}

func (f *fakeProvider) checkAuth(r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer "+testAPIKey {
		f.fail("%s: Authorization %q", r.URL.Path, got)
	}
	if got := r.Header.Get("X-Api-Key"); got != testAPIKey {
		f.fail("%s: X-Api-Key %q", r.URL.Path, got)
	}
}

func (f *fakeProvider) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bad)
}

// call is one request of the recording script.
type call struct {
	method, path, body string
	timeout            time.Duration
}

// outcome is what a client saw.
type outcome struct {
	status int
	header http.Header
	body   []byte
	err    error // transport error
	rerr   error // body read error
}

func do(t *testing.T, client *http.Client, base string, c call) outcome {
	t.Helper()
	ctx := context.Background()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	req.Header.Set("X-Api-Key", testAPIKey)
	req.Header.Set("Cookie", "sid="+testCookie)
	req.Header.Set("X-Custom-Token", testCustomTok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return outcome{status: resp.StatusCode, header: resp.Header, body: b, rerr: rerr}
}

func script() []call {
	return []call{
		{method: "POST", path: "/v1/chat/completions", body: `{"prompt":"hello, key ` + testAPIKey + ` and ` + testToolSecret + `"}`},
		{method: "POST", path: "/v1/pretty", body: `{"prompt":"pretty"}`},
		{method: "GET", path: "/v1/models?key=" + testAPIKey + "&limit=5"},
		{method: "POST", path: "/v1/limited", body: `{"prompt":"limited"}`},
		{method: "GET", path: "/v1/secret-echo"},
		{method: "GET", path: "/v1/binary"},
		{method: "POST", path: "/v1/reset", body: `{"prompt":"reset"}`},
		{method: "POST", path: "/v1/truncated", body: `{"prompt":"truncated"}`},
		{method: "POST", path: "/v1/slow", body: `{"prompt":"slow"}`, timeout: 50 * time.Millisecond},
		{method: "POST", path: "/v1/chat/completions", body: `{"prompt":"second"}`},
	}
}

const concurrent = 16

func concurrentCall(i int) call {
	return call{method: "POST", path: "/v1/chat/completions", body: fmt.Sprintf(`{"prompt":"concurrent %d"}`, i)}
}

// readCassette returns the names of the cassette files in dir, sorted, and
// their parsed contents.
func readCassette(t *testing.T, dir string) ([]string, map[string]map[string]any, map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	parsed := map[string]map[string]any{}
	raw := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		names = append(names, e.Name())
		parsed[e.Name()], raw[e.Name()] = m, data
	}
	slices.Sort(names)
	return names, parsed, raw
}

func TestRecordThenReplay(t *testing.T) {
	srv := newFakeProvider(t)
	dir := filepath.Join(t.TempDir(), "cassettes")
	rec, err := NewRecorder(dir, srv.Client().Transport, testToolSecret)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rec}
	steps := script()
	live := make([]outcome, len(steps))
	for i, c := range steps {
		live[i] = do(t, client, srv.URL, c)
	}
	liveConc := make([]outcome, concurrent)
	var wg sync.WaitGroup
	for i := range concurrent {
		wg.Go(func() { liveConc[i] = do(t, client, srv.URL, concurrentCall(i)) })
	}
	wg.Wait()
	if p := srv.problems(); len(p) > 0 {
		t.Fatalf("requests were changed on their way: %q", p)
	}
	if err := rec.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}

	// What the recording caller saw is what the server sent.
	if o := live[0]; o.err != nil || o.status != 200 || !strings.Contains(string(o.body), testAPIKey) {
		t.Errorf("live chat: %+v", o)
	}
	if o := live[4]; !strings.Contains(string(o.body), testAPIKey) || o.header.Get("Set-Cookie") == "" {
		t.Errorf("live secret echo was scrubbed on its way to the caller: %+v", o)
	}
	if live[6].err == nil || live[7].rerr == nil || !errors.Is(live[8].err, context.DeadlineExceeded) {
		t.Fatalf("live errors: reset %v, truncated %v, slow %v", live[6].err, live[7].rerr, live[8].err)
	}

	t.Run("files", func(t *testing.T) {
		checkFiles(t, dir, len(steps))
	})

	srv.Close()
	rp, err := NewReplayer(dir, testToolSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := rp.Remaining(); got != len(steps)+concurrent {
		t.Fatalf("Remaining = %d, want %d", got, len(steps)+concurrent)
	}
	client = &http.Client{Transport: rp}
	for i, c := range steps {
		got := do(t, client, srv.URL, c)
		checkReplayed(t, fmt.Sprintf("step %d %s", i, c.path), live[i], got)
	}
	// Replay the concurrent ones in reverse order: each body finds its own.
	for i := concurrent - 1; i >= 0; i-- {
		got := do(t, client, srv.URL, concurrentCall(i))
		checkReplayed(t, fmt.Sprintf("concurrent %d", i), liveConc[i], got)
	}
	if n := rp.Remaining(); n != 0 {
		t.Errorf("Remaining after replay = %d", n)
	}
	o := do(t, client, srv.URL, steps[0])
	if !errors.Is(o.err, ErrNoMoreExchanges) || !strings.Contains(o.err.Error(), "no more exchanges for that endpoint") ||
		!strings.Contains(o.err.Error(), "/v1/chat/completions") {
		t.Errorf("exhausted: %v", o.err)
	}
	var ne net.Error
	if !errors.As(o.err, &ne) {
		t.Errorf("exhausted error through http.Client is not a net.Error: %T", o.err)
	}
}

// checkFiles checks the cassette written by TestRecordThenReplay.
func checkFiles(t *testing.T, dir string, steps int) {
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, %v", info.Mode(), err)
	}
	names, files, raw := readCassette(t, dir)
	if len(names) != steps+concurrent {
		t.Fatalf("%d files, want %d: %q", len(names), steps+concurrent, names)
	}
	wantPrefix := []string{"000001-127.0.0.1-", "000002-", "000003-", "000004-", "000005-", "000006-", "000007-", "000008-", "000009-", "000010-"}
	wantSuffix := []string{"-v1-chat-completions.json", "-v1-pretty.json", "-v1-models.json", "-v1-limited.json",
		"-v1-secret-echo.json", "-v1-binary.json", "-v1-reset.json", "-v1-truncated.json", "-v1-slow.json", "-v1-chat-completions.json"}
	for i := range steps {
		if !strings.HasPrefix(names[i], wantPrefix[i]) || !strings.HasSuffix(names[i], wantSuffix[i]) {
			t.Errorf("file %d is %s", i, names[i])
		}
	}
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", name, fi.Mode(), err)
		}
		data := string(raw[name])
		for _, secret := range []string{testAPIKey, testToolSecret, testCookie, testCustomTok, "abcdefgh12345", "sessiontoken-999",
			url.QueryEscape(testAPIKey), "sk-test"} {
			if strings.Contains(data, secret) {
				t.Errorf("%s contains secret %q:\n%s", name, secret, data)
			}
		}
		if !strings.Contains(data, "\n  \"request\": {\n") {
			t.Errorf("%s is not indented:\n%s", name, data)
		}
		f := files[name]
		if f["version"] != 1.0 || f["recorded_at"] == nil {
			t.Errorf("%s: version/recorded_at: %v %v", name, f["version"], f["recorded_at"])
		}
		h := f["request"].(map[string]any)["headers"].(map[string]any)
		for _, k := range []string{"Authorization", "X-Api-Key", "Cookie", "X-Custom-Token"} {
			if v := h[k]; v != scrubbed {
				t.Errorf("%s: request header %s = %s", name, k, v)
			}
		}
	}
	req := func(i int) map[string]any { return files[names[i]]["request"].(map[string]any) }
	resp := func(i int) map[string]any { return files[names[i]]["response"].(map[string]any) }

	if b, ok := req(0)["body"].(map[string]any); !ok || req(0)["body_format"] != "json" ||
		b["prompt"] != "hello, key [scrubbed] and [scrubbed]" {
		t.Errorf("chat request body: %v", req(0)["body"])
	}
	if r := resp(1); r["body_format"] != "json" || r["body_indent"] != "  " || r["body_trailer"] != "\n" {
		t.Errorf("pretty response body: %v", r)
	}
	if u := req(2)["url"].(string); !strings.HasSuffix(u, "/v1/models?key=[scrubbed]&limit=5") {
		t.Errorf("models url %s", u)
	}
	if r := resp(2); r["body_format"] != "text" || r["body"] != "models: a, b\n" {
		t.Errorf("models response body: %v", r)
	}
	if r := resp(3); r["status"] != 429.0 || r["headers"].(map[string]any)["Retry-After"] != "7" {
		t.Errorf("limited response: %v", r)
	}
	r4 := resp(4)
	h4 := r4["headers"].(map[string]any)
	if h4["Set-Cookie"] != scrubbed || h4["X-Session-Token"] != scrubbed || h4["X-Echo"] != "key was [scrubbed]" {
		t.Errorf("secret echo headers: %v", h4)
	}
	if b := r4["body"].(map[string]any); b["note"] != "your key is [scrubbed]" || b["tool"] != "[scrubbed]" {
		t.Errorf("secret echo body: %v", b)
	}
	if r := resp(5); r["body_format"] != "base64" || r["body"] != "/wD+eA==" {
		t.Errorf("binary body: %v", r)
	}
	if f := files[names[6]]; f["response"] != nil || f["error"] == nil {
		t.Errorf("reset: %v", f)
	}
	if r := resp(7); r["body"] != "partial" || r["body_error"].(map[string]any)["kind"] != "unexpected_eof" {
		t.Errorf("truncated: %v", r)
	}
	if e, _ := files[names[8]]["error"].(map[string]any); e == nil || e["kind"] != "deadline_exceeded" {
		t.Errorf("slow: %v", files[names[8]])
	}
	var prompts []string
	for _, name := range names[steps:] {
		b := files[name]["request"].(map[string]any)["body"].(map[string]any)
		prompts = append(prompts, b["prompt"].(string))
	}
	slices.Sort(prompts)
	if len(slices.Compact(prompts)) != concurrent {
		t.Errorf("concurrent prompts: %q", prompts)
	}
}

// checkReplayed compares a replayed outcome with the live one, allowing for
// scrubbing.
func checkReplayed(t *testing.T, what string, live, got outcome) {
	t.Helper()
	if (live.err == nil) != (got.err == nil) {
		t.Errorf("%s: live err %v, replayed err %v", what, live.err, got.err)
		return
	}
	if live.err != nil {
		if !strings.Contains(got.err.Error(), "recorded error") {
			t.Errorf("%s: replayed error %v", what, got.err)
		}
		if errors.Is(live.err, context.DeadlineExceeded) != errors.Is(got.err, context.DeadlineExceeded) {
			t.Errorf("%s: deadline: live %v, replayed %v", what, live.err, got.err)
		}
		return
	}
	if got.status != live.status {
		t.Errorf("%s: status %d, live %d", what, got.status, live.status)
	}
	if !strings.HasSuffix(got.header.Get(HeaderFile), ".json") {
		t.Errorf("%s: %s = %q", what, HeaderFile, got.header.Get(HeaderFile))
	}
	gh := got.header.Clone()
	gh.Del(HeaderFile)
	wantH := live.header.Clone()
	for k, vs := range wantH {
		for i, v := range vs {
			if sensitiveHeader(k) {
				vs[i] = scrubbed
			} else {
				vs[i] = strings.ReplaceAll(v, testAPIKey, scrubbed)
			}
		}
	}
	if fmt.Sprint(gh) != fmt.Sprint(wantH) {
		t.Errorf("%s: headers\n got %v\nlive %v", what, gh, wantH)
	}
	wantB := bytes.ReplaceAll(bytes.ReplaceAll(live.body, []byte(testAPIKey), []byte(scrubbed)), []byte(testToolSecret), []byte(scrubbed))
	if !bytes.Equal(got.body, wantB) {
		t.Errorf("%s: body\n got %q\nwant %q", what, got.body, wantB)
	}
	if (live.rerr == nil) != (got.rerr == nil) || live.rerr != nil && !errors.Is(got.rerr, io.ErrUnexpectedEOF) {
		t.Errorf("%s: body error %v, live %v", what, got.rerr, live.rerr)
	}
}

func TestReplayPrefersIdenticalBodyThenOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, "answer to "+string(b))
	}))
	dir := t.TempDir()
	rec, err := NewRecorder(dir, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	post := func(c *http.Client, path, body string) (string, error) {
		resp, err := c.Post(srv.URL+path, "text/plain", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	client := &http.Client{Transport: rec}
	for _, b := range []string{"A", "B", "C"} {
		if _, err := post(client, "/v1/ask", b); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()

	rp, err := NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	client = &http.Client{Transport: rp}
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/ask", "C", "answer to C"}, // identical body wins over order
		{"/v1/ask", "X", "answer to A"}, // no identical body: earliest unused
		{"/v1/ask", "A", "answer to B"}, // A is used up: earliest unused
	} {
		got, err := post(client, tc.path, tc.body)
		if err != nil || got != tc.want {
			t.Errorf("POST %s %q = %q, %v; want %q", tc.path, tc.body, got, err, tc.want)
		}
	}
	if _, err := post(client, "/v1/ask", "C"); !errors.Is(err, ErrNoMoreExchanges) || !strings.Contains(err.Error(), "3 recorded, all used") {
		t.Errorf("exhausted: %v", err)
	}
	if _, err := post(client, "/v1/other", "A"); !errors.Is(err, ErrNoMoreExchanges) || !strings.Contains(err.Error(), "none recorded") {
		t.Errorf("other endpoint: %v", err)
	}
	if resp, err := client.Get(srv.URL + "/v1/ask"); err == nil {
		resp.Body.Close()
		t.Errorf("GET matched a POST exchange")
	}
}

func TestReplayHonoursContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 100))
	}))
	dir := t.TempDir()
	rec, err := NewRecorder(dir, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		resp, err := (&http.Client{Transport: rec}).Get(srv.URL + "/v1/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	srv.Close()
	rp, err := NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/x", nil)
	if _, err := rp.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: %v", err)
	}
	if rp.Remaining() != 2 {
		t.Errorf("a canceled request used an exchange: Remaining = %d", rp.Remaining())
	}

	// Canceling while the body is being read stops the read.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/x", nil)
	resp, err := rp.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 10)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
}

func TestRecordBodyClosedEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789", 1000))
	}))
	defer srv.Close()
	dir := t.TempDir()
	rec, err := NewRecorder(dir, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rec}).Get(srv.URL + "/v1/long")
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 15)
	if _, err := io.ReadFull(resp.Body, part); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, files, _ := readCassette(t, dir)
	for name, f := range files {
		r := f["response"].(map[string]any)
		if r["body"] != "012345678901234" || r["body_incomplete"] != true {
			t.Errorf("%s: %v", name, r)
		}
	}
	rp, err := NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = (&http.Client{Transport: rp}).Get(srv.URL + "/v1/long")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if string(b) != "012345678901234" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("replayed partial body %q, %v", b, err)
	}
}

func TestNewReplayerRejectsBadFiles(t *testing.T) {
	good := `{"version":1,"request":{"method":"GET","url":"http://h/p"},"response":{"status":200}}`
	for _, tc := range []struct{ name, content, want string }{
		{"not json", `{"version":1,`, "parse"},
		{"version", `{"version":2,"request":{"method":"GET","url":"http://h/p"},"response":{"status":200}}`, "version 2"},
		{"body format", `{"version":1,"request":{"method":"GET","url":"http://h/p"},"response":{"status":200,"body_format":"gzip","body":"x"}}`, "unknown body_format"},
		{"no outcome", `{"version":1,"request":{"method":"GET","url":"http://h/p"}}`, "neither"},
		{"relative url", `{"version":1,"request":{"method":"GET","url":"/p"},"response":{"status":200}}`, "not an absolute URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "000001-h-p.json"), []byte(good), 0o600)
			os.WriteFile(filepath.Join(dir, "000002-h-p.json"), []byte(tc.content), 0o600)
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o600)
			_, err := NewReplayer(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "000002-h-p.json")) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewReplayer: %v; want the file and %q", err, tc.want)
			}
		})
	}
	if _, err := NewReplayer(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing dir accepted")
	}
	rp, err := NewReplayer(t.TempDir())
	if err != nil || rp.Remaining() != 0 {
		t.Errorf("empty dir: %v, %v", rp, err)
	}
}

func TestRecorderContinuesNumberingAndReportsWriteErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "000041-old.json"), []byte("{}"), 0o600)
	rec, err := NewRecorder(dir, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		resp, err := (&http.Client{Transport: rec}).Get(srv.URL + "/v1/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	if _, err := os.Stat(filepath.Join(dir, "000042-127.0.0.1-"+strings.TrimPrefix(srv.URL, "http://127.0.0.1:")+"-v1-x.json")); err != nil {
		t.Errorf("next file: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	get() // the caller still gets its answer
	if err := rec.Err(); err == nil || !strings.Contains(err.Error(), "000043-") {
		t.Errorf("Err after failed write: %v", err)
	}
	if _, err := NewRecorder("", nil); err == nil {
		t.Error("empty dir accepted")
	}
}
