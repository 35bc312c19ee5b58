package webchat

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/chat"
)

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var assetRef = regexp.MustCompile(`/assets/([0-9a-f]{16})/([a-z]+\.[a-z]+)`)

// assetPaths returns the asset URLs the page refers to.
func assetPaths(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range assetRef.FindAllStringSubmatch(page, -1) {
		out[m[2]] = m[0]
	}
	if len(out) == 0 {
		t.Fatalf("the page refers to no assets:\n%s", page)
	}
	return out
}

func TestPageRoutes(t *testing.T) {
	h := Handler(PageBoard)
	var first string
	for _, path := range []string{"/", "/turns", "/turns/", "/turns/t-123", "/turns/a%20b", "/?x=1", "/turns?status=ok&provider=openai",
		"/board", "/board/", "/board/c/id0004", "/board/c/a%20b"} {
		resp := get(t, h, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", path, cc)
		}
		if resp.Header.Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", path)
		}
		b := body(t, resp)
		if first == "" {
			first = b
		} else if b != first {
			t.Errorf("GET %s: a different page than /", path)
		}
	}
	if strings.Contains(first, versionPlaceholder) {
		t.Error("the page still holds the version placeholder")
	}
	for _, want := range []string{`<html lang="en" data-pages="board">`, `name="viewport"`, `id="view-login"`, `id="view-trace"`, `id="view-board"`, `id="view-card"`, `role="log"`, `aria-live="polite"`} {
		if !strings.Contains(first, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// A page over a tool's data exists only on a handler given it: without
// the board, /board and its cards are 404 and the app is told there is no
// board (its navigation entry stays hidden).
func TestPagesFollowTheHandler(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/board", "/board/", "/board/c/id0004"} {
		if resp := get(t, h, http.MethodGet, path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without the board: status %d, want 404", path, resp.StatusCode)
		}
	}
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	if !strings.Contains(page, `<html lang="en" data-pages="">`) || strings.Contains(page, pagesPlaceholder) {
		t.Errorf("the page without pages does not say so: %.200s", page)
	}
	if !regexp.MustCompile(`<a href="/board"[^>]* data-page="board"[^>]* hidden>`).MatchString(page) {
		t.Error("the board's navigation entry is not hidden until the page is there")
	}
	with := body(t, get(t, Handler(PageBoard, PageBoard), http.MethodGet, "/", nil))
	if !strings.Contains(with, `data-pages="board"`) {
		t.Error("the page with the board does not name it")
	}
	if _, err := New("calendar"); err == nil || !strings.Contains(err.Error(), `no page "calendar"`) {
		t.Errorf("New(calendar) = %v, want an error naming the page", err)
	}
}

func TestPageHasNoInlineCode(t *testing.T) {
	page := body(t, get(t, Handler(), http.MethodGet, "/", nil))
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), // a script with a body
		regexp.MustCompile(`<script(?:(?:\s+type="module")?)>`),
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?i)https?://`),
		regexp.MustCompile(`javascript:`),
	} {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("the page has %q (%s), which the policy forbids or which reaches outside the site", page[loc[0]:loc[1]], bad)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := Handler()
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	paths := []string{"/", "/turns/x", "/nope", "/v1/messages"}
	for _, p := range assetPaths(t, page) {
		paths = append(paths, p)
	}
	for _, path := range paths {
		resp := get(t, h, http.MethodGet, path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, got)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options %q", path, got)
		}
		if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("GET %s: Referrer-Policy %q", path, got)
		}
	}
	// The policy itself: same origin only, nothing inline, nothing eval'd.
	directives := map[string]string{}
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			directives[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for name, want := range map[string]string{
		"default-src": "'self'", "script-src": "'self'", "style-src": "'self'", "object-src": "'none'",
		"base-uri": "'none'", "frame-ancestors": "'none'", "require-trusted-types-for": "'script'",
	} {
		if directives[name] != want {
			t.Errorf("policy %s = %q, want %q", name, directives[name], want)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") || strings.Contains(ContentSecurityPolicy, "*") || strings.Contains(ContentSecurityPolicy, "data:") {
		t.Errorf("the policy allows more than the site itself: %s", ContentSecurityPolicy)
	}
}

func TestAssets(t *testing.T) {
	h := Handler()
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	paths := assetPaths(t, page)
	want := map[string]string{
		"app.js":   "text/javascript; charset=utf-8",
		"app.css":  "text/css; charset=utf-8",
		"icon.svg": "image/svg+xml",
	}
	for name, ct := range want {
		path, ok := paths[name]
		if !ok {
			t.Errorf("the page does not refer to %s", name)
			continue
		}
		resp := get(t, h, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		if got := resp.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q", path, got)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", path)
		}
		if len(body(t, resp)) == 0 {
			t.Errorf("GET %s: empty", path)
		}
		again := get(t, h, http.MethodGet, path, map[string]string{"If-None-Match": etag})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: status %d, want 304", path, again.StatusCode)
		}
	}
	// Modules load each other by relative path, under the same version.
	js := paths["app.js"]
	dir := js[:strings.LastIndex(js, "/")+1]
	for _, mod := range []string{"api.js", "board.js", "chat.js", "dom.js", "i18n.js", "questions.js", "session.js", "trace.js", "turns.js"} {
		resp := get(t, h, http.MethodGet, dir+mod, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("GET %s: status %d, Content-Type %q", dir+mod, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

func TestNotFound(t *testing.T) {
	h := Handler()
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	js := assetPaths(t, page)["app.js"]
	dir := js[:strings.LastIndex(js, "/")+1]
	for _, path := range []string{
		"/assets/",                        // no listing
		dir,                               // no listing of the version either
		dir + "missing.js",                // unknown asset
		dir + "index.html",                // the page is not an asset
		"/assets/0000000000000000/app.js", // another version
		"/assets/app.js",
		"/static/app.js",
		"/index.html",
		"/turns/a/b",
		"/board/c",
		"/board/c/",
		"/board/c/a/b",
		"/board/x",
		"/nope",
		"/v1/messages", // the API's paths are never answered with the page
		"/v1/turns/t1",
		"/healthz",
		"/metrics",
		"/favicon.ico",
	} {
		resp := get(t, h, http.MethodGet, path, nil)
		b := body(t, resp)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
		}
		if strings.Contains(b, "<html") || strings.Contains(b, "app.js") {
			t.Errorf("GET %s: the 404 shows a page or a listing: %q", path, b)
		}
	}
}

func TestMethods(t *testing.T) {
	h := Handler()
	resp := get(t, h, http.MethodHead, "/turns", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD /turns: status %d, Content-Length %q", resp.StatusCode, resp.Header.Get("Content-Length"))
	}
	if b := body(t, resp); b != "" {
		t.Errorf("HEAD /turns has a body of %d bytes", len(b))
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		resp := get(t, h, method, "/", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /: status %d, Allow %q", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// greeter is a chat.Handler that says hi.
type greeter struct{}

func (greeter) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	return chat.Outbound{TurnID: "t1", Say: "hi"}, nil
}

// TestMounting checks the documented mounting: the app at "/" next to the
// API's prefixes on one mux leaves the API's paths to the API.
func TestMounting(t *testing.T) {
	api, err := httpapi.New(httpapi.Config{
		Handler: greeter{},
		Keys:    []httpapi.Key{{Token: "k-mount-test", Identity: chat.Identity{TenantID: "acme", UserID: "alice"}}},
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
			return nil, httpapi.ErrTurnNotFound
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "metrics\n")
	})
	mux := http.NewServeMux()
	mux.Handle("/", Handler(PageBoard))
	mux.Handle("/v1/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/metrics", metrics)
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/healthz", `{"status":"ok"}`},
		{http.MethodGet, "/metrics", "metrics"},
		{http.MethodGet, "/v1/turns/t1", `"unauthorized"`},
		{http.MethodPost, "/v1/messages", `"unauthorized"`},
		{http.MethodGet, "/v1/nope", `"not_found"`},
	} {
		resp := get(t, mux, c.method, c.path, nil)
		if b := body(t, resp); !strings.Contains(b, c.want) || strings.Contains(b, "<html") {
			t.Errorf("%s %s: %d %q, want the API's answer with %s", c.method, c.path, resp.StatusCode, b, c.want)
		}
	}
	for _, path := range []string{"/", "/turns", "/turns/t1", "/board", "/board/c/id1"} {
		resp := get(t, mux, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

// TestScriptsAvoidHTMLSinks keeps server data out of the HTML parser: the
// scripts never use innerHTML and friends (Trusted Types would refuse them
// at run time too).
func TestScriptsAvoidHTMLSinks(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['"]on|localStorage|document\.cookie`)
	err := fs.WalkDir(staticFS, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		b, err := fs.ReadFile(staticFS, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := sinks.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// catalog returns the keys of one language's texts in i18n.js: the
// entries of "const name = {" up to its closing "};".
func catalog(t *testing.T, src, name string) map[string]bool {
	t.Helper()
	start := strings.Index(src, "\nconst "+name+" = {\n")
	if start < 0 {
		t.Fatalf("i18n.js has no catalog %s", name)
	}
	end := strings.Index(src[start:], "\n};\n")
	if end < 0 {
		t.Fatalf("the catalog %s does not end", name)
	}
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  '([a-zA-Z0-9_.]+)':`).FindAllStringSubmatch(src[start:start+end], -1) {
		if keys[m[1]] {
			t.Errorf("catalog %s: %s twice", name, m[1])
		}
		keys[m[1]] = true
	}
	if len(keys) == 0 {
		t.Fatalf("the catalog %s is empty", name)
	}
	return keys
}

// TestTextsInEveryLanguage: English and Russian have the same texts, and
// every text the page and the scripts name exists; the page has no words
// that are not translated at start-up.
func TestTextsInEveryLanguage(t *testing.T) {
	read := func(name string) string {
		b, err := fs.ReadFile(staticFS, "static/"+name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	src := read("i18n.js")
	en, ru := catalog(t, src, "en"), catalog(t, src, "ruText")
	for k := range en {
		if !ru[k] {
			t.Errorf("%s has no Russian text", k)
		}
	}
	for k := range ru {
		if !en[k] {
			t.Errorf("%s has no English text", k)
		}
	}

	page := read("index.html")
	for _, m := range regexp.MustCompile(`data-i18n(?:-[a-z-]+)?="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !en[m[1]] {
			t.Errorf("index.html names the unknown text %q", m[1])
		}
	}
	// Words between tags belong to an element that is translated, but for
	// the name of the app, numbers, the × of a button named by its label,
	// and the message for browsers without scripts.
	body := page[strings.Index(page, "<body>"):]
	body = regexp.MustCompile(`(?s)<noscript>.*?</noscript>`).ReplaceAllString(body, "")
	for _, m := range regexp.MustCompile(`<([a-z0-9]+)((?:\s[^>]*)?)>([^<]*[^<\s][^<]*)<`).FindAllStringSubmatch(body, -1) {
		text := strings.TrimSpace(m[3])
		if strings.Contains(m[2], "data-i18n=") || text == "arbiter" || text == "×" || regexp.MustCompile(`^[0-9]+$`).MatchString(text) {
			continue
		}
		t.Errorf("index.html: <%s%s> says %q, which is not translated", m[1], m[2], text)
	}

	// Every key a script asks for by name.
	used := regexp.MustCompile(`\b(?:t|msg)\('([a-zA-Z0-9_.]+)'[,)]`)
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		for _, m := range used.FindAllStringSubmatch(read(e.Name()), -1) {
			if !en[m[1]] {
				t.Errorf("%s asks for the unknown text %q", e.Name(), m[1])
			}
		}
	}
}
