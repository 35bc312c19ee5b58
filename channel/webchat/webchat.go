// Package webchat is the browser channel: a small single-page app, plain
// HTML, CSS and JavaScript embedded in the binary, that talks to the HTTP
// API of package httpapi from the browser. It has a chat (log in with an API
// key, conversations, reply buttons as chips, confirmations with the
// server's own yes and no buttons, cards for what a running turn asks —
// polled from GET /v1/questions while a message waits for its reply —, a
// link from every reply to its trace), a trace viewer (/turns, a list of
// turns; /turns/{id}, one turn's pipeline, model calls and decision) and
// the pages of the configured tools' data: the task board, read only
// (PageBoard: /board; /board/c/{id}, the card pages the board's links
// point at), served and in the navigation only when the handler is given
// it. The app speaks the user's language as GET
// /v1/me names it (English or Russian) and shows times in the user's zone.
//
// The handler serves only the app's pages and assets; every other path gets
// a plain 404, so it never stands in for the API. All data reaches the page
// through fetch and is rendered as text; the responses carry a strict
// Content-Security-Policy (same-origin scripts and styles only, no inline
// code, Trusted Types required for DOM sinks).
//
// Mount it at "/" on the same mux as the API, with the API under its own
// prefixes. ServeMux picks the most specific pattern whatever the order of
// registration, so /v1/..., /healthz and /metrics keep going to their
// handlers and only the rest reaches the app:
//
//	mux := http.NewServeMux()
//	mux.Handle("/v1/", api)          // the *httpapi.Server
//	mux.Handle("/healthz", api)
//	mux.Handle("/metrics", metrics)
//	mux.Handle("/", webchat.Handler())
//
// The API server must not itself be mounted at "/": it answers every
// unknown path with its own JSON 404, which would hide the app.
//
// Routes (GET and HEAD only):
//
//	/                        the chat
//	/turns                   the list of turns
//	/turns/{id}              one turn's trace
//	/board                   the task board (with PageBoard)
//	/board/c/{id}            one card of the board (with PageBoard)
//	/assets/{version}/{file} the app's scripts, styles and icon
//
// Pages are sent with Cache-Control: no-cache and an ETag; assets live
// under a path that contains a hash of their content, so they are cached
// as immutable and a new build is picked up by the next page load.
package webchat

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is the policy sent with every response of the
// handler: nothing but same-origin scripts, styles, images and fetches; no
// inline code, no eval, no plugins, no framing, and Trusted Types required
// so that a string can never be written into an HTML sink.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// versionPlaceholder is replaced in index.html by the assets' version,
// pagesPlaceholder by the handler's pages.
const (
	versionPlaceholder = "__ASSET_VERSION__"
	pagesPlaceholder   = "__PAGES__"
)

// Page is a view of the app over data a part of the server owns, there
// only when that part is configured: its routes are served and its entry
// shows in the navigation only on a handler given it.
type Page string

// PageBoard is the task board (/board) and its cards' pages
// (/board/c/{id}), read from GET /v1/board and GET /v1/board/cards/{id}.
const PageBoard Page = "board"

// pageRoutes are the routes of each page.
var pageRoutes = map[Page][]string{PageBoard: {"/board", "/board/{$}", "/board/c/{id}"}}

// asset is one file ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// app is the built handler: the page and the versioned assets.
type app struct {
	version string
	page    asset
	assets  map[string]asset // by file name
}

// contentTypes maps the extensions the app uses to their media types; a
// file with any other extension is not served.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

// Handler returns the browser app's handler with the chat, the turns and
// the given pages; it panics on a page this package does not have (see
// New). It is safe for concurrent use and cheap to call more than once.
func Handler(pages ...Page) http.Handler {
	h, err := New(pages...)
	if err != nil {
		panic(err)
	}
	return h
}

// New is Handler, with an error for a page this package does not have.
func New(pages ...Page) (http.Handler, error) {
	base, err := built()
	if err != nil {
		// The files are embedded at build time; failing here is a
		// packaging bug, found by the package's tests.
		return nil, fmt.Errorf("webchat: %w", err)
	}
	a := *base
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", a.servePage)
	mux.HandleFunc("/turns", a.servePage)
	mux.HandleFunc("/turns/{$}", a.servePage)
	mux.HandleFunc("/turns/{id}", a.servePage)
	var names []string
	for _, p := range pages {
		routes, ok := pageRoutes[p]
		if !ok {
			return nil, fmt.Errorf("webchat: no page %q", p)
		}
		if slices.Contains(names, string(p)) {
			continue
		}
		names = append(names, string(p))
		for _, r := range routes {
			mux.HandleFunc(r, a.servePage)
		}
	}
	// The app shows a page's navigation entry and routes to it only when
	// the page says it is there.
	page := bytes.ReplaceAll(base.page.body, []byte(pagesPlaceholder), []byte(strings.Join(names, " ")))
	a.page = asset{body: page, contentType: base.page.contentType, etag: etag(page)}
	mux.HandleFunc("/assets/{version}/{file}", a.serveAsset)
	mux.HandleFunc("/", notFound)
	return secure(mux), nil
}

// built is the app, read and hashed once.
var built = sync.OnceValues(func() (*app, error) { return build(staticFS) })

func build(fsys fs.FS) (*app, error) {
	sub, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(sub, ".")
	if err != nil {
		return nil, err
	}
	a := &app{assets: map[string]asset{}}
	h := sha256.New()
	var page []byte
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(sub, e.Name())
		if err != nil {
			return nil, err
		}
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		h.Write(body)
		if e.Name() == "index.html" {
			page = body
			continue
		}
		ct, ok := contentTypes[path.Ext(e.Name())]
		if !ok {
			continue
		}
		a.assets[e.Name()] = asset{body: body, contentType: ct, etag: etag(body)}
	}
	if page == nil {
		return nil, fs.ErrNotExist
	}
	a.version = hex.EncodeToString(h.Sum(nil))[:16]
	page = bytes.ReplaceAll(page, []byte(versionPlaceholder), []byte(a.version))
	a.page = asset{body: page, contentType: "text/html; charset=utf-8", etag: etag(page)}
	return a, nil
}

func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// secure sets the headers every response of the app carries.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
		next.ServeHTTP(w, r)
	})
}

func (a *app) servePage(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	// The page names nothing of the caller; every view is built in the
	// browser from the API, so one body serves every route.
	serve(w, r, a.page, "no-cache")
}

func (a *app) serveAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := a.assets[r.PathValue("file")]
	if !ok || r.PathValue("version") != a.version {
		notFound(w, r)
		return
	}
	if !readOnly(w, r) {
		return
	}
	serve(w, r, f, "public, max-age=31536000, immutable")
}

func serve(w http.ResponseWriter, r *http.Request, f asset, cacheControl string) {
	h := w.Header()
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", f.etag)
	h.Set("Content-Type", f.contentType)
	if etagMatches(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}

// etagMatches reports whether an If-None-Match header names tag.
func etagMatches(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}

// readOnly answers 405 to anything but GET and HEAD and reports whether
// the request may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// notFound answers every path that is not the app's: the handler has no
// directory listings and no fallback page.
func notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "404 page not found", http.StatusNotFound)
}
