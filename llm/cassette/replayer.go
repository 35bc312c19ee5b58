package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrNoMoreExchanges is wrapped by the error a Replayer returns when its
// cassette has no unused exchange left for a request's method, host and
// path. Through an http.Client it arrives wrapped in a *url.Error, which
// providers treat as a network error.
var ErrNoMoreExchanges = errors.New("cassette has no more exchanges for that endpoint")

// HeaderFile is the response header a Replayer adds to every replayed
// response: the name of the cassette file it came from.
const HeaderFile = "X-Cassette"

// Replayer is an http.RoundTripper that answers requests from the
// exchanges of a cassette directory and never touches the network.
//
// Each exchange is replayed at most once. A request takes an unused
// exchange with the same method, host and path (query and headers are not
// compared): the earliest one whose request body is byte-identical to the
// request's, both scrubbed, and otherwise the earliest one; bodies of model
// calls often differ between runs, as prompts carry the current time. When
// none is left, RoundTrip returns an error wrapping ErrNoMoreExchanges.
//
// A replayed response has the recorded status, headers and body, plus the
// header X-Cassette naming the file. A recorded transport error is returned
// as a *ReplayedError; a recorded body error, or a body recorded only in
// part, ends the replayed body with one. A request whose context is done
// gets its context's error and uses up no exchange; the context also aborts
// reading a replayed body.
//
// A Replayer is safe for concurrent use and never writes to its directory.
type Replayer struct {
	dir   string
	scrub *scrubber

	mu         sync.Mutex
	byEndpoint map[string][]*recorded
	remaining  int
}

var _ http.RoundTripper = (*Replayer)(nil)

// recorded is one loaded exchange.
type recorded struct {
	file     string
	seq      uint64
	endpoint string
	reqBody  []byte
	used     bool

	err     *ReplayedError // transport error, or nil
	status  int
	header  http.Header
	body    []byte
	bodyEnd *ReplayedError // error after body, or nil
}

// NewReplayer loads every cassette file of dir (files named NNNNNN-*.json;
// others are ignored). secrets, if given, are scrubbed from incoming
// requests before their bodies are compared, as NewRecorder scrubbed them
// from the recorded ones; pass the same ones for the best matches. It fails,
// naming the file, if a cassette file cannot be read or parsed or has an
// unknown version; an empty directory is valid and replays nothing.
func NewReplayer(dir string, secrets ...string) (*Replayer, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cassette: new replayer: %w", err)
	}
	var all []*recorded
	for _, e := range entries {
		seq, ok := fileSeq(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		rec, err := loadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cassette: load %s: %w", path, err)
		}
		rec.file, rec.seq = e.Name(), seq
		all = append(all, rec)
	}
	slices.SortFunc(all, func(a, b *recorded) int {
		if a.seq != b.seq {
			if a.seq < b.seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.file, b.file)
	})
	r := &Replayer{dir: dir, scrub: newScrubber(secrets), byEndpoint: make(map[string][]*recorded), remaining: len(all)}
	for _, rec := range all {
		r.byEndpoint[rec.endpoint] = append(r.byEndpoint[rec.endpoint], rec)
	}
	return r, nil
}

// loadFile parses and checks one cassette file.
func loadFile(path string) (*recorded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var x exchangeFile
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if x.Version != formatVersion {
		return nil, fmt.Errorf("version %d, want %d", x.Version, formatVersion)
	}
	if x.Request.Method == "" {
		return nil, errors.New("request has no method")
	}
	u, err := url.Parse(x.Request.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("request url %q is not an absolute URL", x.Request.URL)
	}
	rec := &recorded{endpoint: endpointKey(x.Request.Method, u)}
	if rec.reqBody, err = x.Request.decode(); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	switch {
	case x.Response != nil && x.Error != nil:
		return nil, errors.New("both a response and an error")
	case x.Error != nil:
		rec.err = &ReplayedError{Message: x.Error.Message, Kind: x.Error.Kind}
		return rec, nil
	case x.Response == nil:
		return nil, errors.New("neither a response nor an error")
	}
	resp := x.Response
	if resp.Status < 100 || resp.Status > 999 {
		return nil, fmt.Errorf("response status %d out of range", resp.Status)
	}
	rec.status, rec.header = resp.Status, http.Header(resp.Headers)
	if rec.header == nil {
		rec.header = http.Header{}
	}
	if rec.body, err = resp.decode(); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	switch {
	case resp.BodyError != nil:
		rec.bodyEnd = &ReplayedError{Message: resp.BodyError.Message, Kind: resp.BodyError.Kind}
	case resp.BodyIncomplete:
		rec.bodyEnd = &ReplayedError{Message: "the recording ends here: the body was closed before its end", Kind: kindUnexpectedEOF}
	}
	return rec, nil
}

// endpointKey is what a request must share with an exchange to use it.
func endpointKey(method string, u *url.URL) string {
	if method == "" {
		method = http.MethodGet
	}
	return method + " " + strings.ToLower(u.Host) + u.Path
}

// Remaining returns the number of exchanges not yet replayed.
func (r *Replayer) Remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.remaining
}

// RoundTrip answers req from the cassette; see Replayer for the rules. It
// always closes the request body.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, bodyErr := readAllAndClose(req.Body)
	rep := r.scrub.forRequest(req)
	scrubbedURL := rep.url(req.URL)
	if err := req.Context().Err(); err != nil {
		return nil, fmt.Errorf("cassette: replay %s %s: %w", req.Method, scrubbedURL, err)
	}
	if bodyErr != nil {
		return nil, fmt.Errorf("cassette: replay %s %s: read request body: %w", req.Method, scrubbedURL, bodyErr)
	}
	u, err := url.Parse(scrubbedURL)
	if err != nil {
		u = req.URL
	}
	key := endpointKey(req.Method, u)
	body = rep.bytes(body)

	rec, recordedCount := r.take(key, body)
	if rec == nil {
		detail := "none recorded"
		if recordedCount > 0 {
			detail = fmt.Sprintf("%d recorded, all used", recordedCount)
		}
		return nil, fmt.Errorf("cassette: replay %s from %s (%s): %w", key, r.dir, detail, ErrNoMoreExchanges)
	}
	if rec.err != nil {
		e := *rec.err
		e.File = rec.file
		return nil, &e
	}
	header := rec.header.Clone()
	header.Set(HeaderFile, rec.file)
	resp := &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		ContentLength: int64(len(rec.body)),
		Body:          &replayBody{ctxErr: req.Context().Err, r: bytes.NewReader(rec.body)},
		Request:       req,
	}
	if rec.bodyEnd != nil {
		e := *rec.bodyEnd
		e.File = rec.file
		resp.ContentLength = -1
		resp.Body.(*replayBody).end = &e
	}
	return resp, nil
}

// take marks and returns the exchange for a request, or nil and the number
// of exchanges recorded for the endpoint.
func (r *Replayer) take(key string, body []byte) (*recorded, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byEndpoint[key]
	var pick *recorded
	for _, rec := range list {
		if rec.used {
			continue
		}
		if bytes.Equal(rec.reqBody, body) {
			pick = rec
			break
		}
		if pick == nil {
			pick = rec
		}
	}
	if pick == nil {
		return nil, len(list)
	}
	pick.used = true
	r.remaining--
	return pick, len(list)
}

// replayBody serves a recorded body, then io.EOF or the recorded end error.
// It stops with the context's error once the request context is done.
type replayBody struct {
	// ctxErr is the request context's Err: reading stops once it is done.
	ctxErr func() error
	r      *bytes.Reader
	end    *ReplayedError

	mu     sync.Mutex
	closed bool
}

var errReadAfterClose = errors.New("cassette: read on closed response body")

func (b *replayBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errReadAfterClose
	}
	if err := b.ctxErr(); err != nil {
		return 0, err
	}
	n, err := b.r.Read(p)
	if err == io.EOF && b.end != nil {
		if n > 0 {
			return n, nil
		}
		return 0, b.end
	}
	return n, err
}

func (b *replayBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// ReplayedError is a transport error, or a response body error, reproduced
// from a cassette. It is a net.Error; errors.Is matches it to the error it
// was recorded from when that was context.DeadlineExceeded,
// context.Canceled, io.ErrUnexpectedEOF, io.EOF, syscall.ECONNRESET or
// syscall.ECONNREFUSED. A body recorded only in part ends with one
// matching io.ErrUnexpectedEOF.
type ReplayedError struct {
	File    string // cassette file name
	Message string // the recorded error text, scrubbed
	Kind    string // the recorded kind, "" if none; see the package comment
}

func (e *ReplayedError) Error() string {
	return fmt.Sprintf("cassette %s: recorded error: %s", e.File, e.Message)
}

// Unwrap returns the standard error the recorded one matched, if any.
func (e *ReplayedError) Unwrap() error {
	switch e.Kind {
	case kindDeadline:
		return context.DeadlineExceeded
	case kindCanceled:
		return context.Canceled
	case kindUnexpectedEOF:
		return io.ErrUnexpectedEOF
	case kindEOF:
		return io.EOF
	case kindReset:
		return syscall.ECONNRESET
	case kindRefused:
		return syscall.ECONNREFUSED
	}
	return nil
}

// Timeout reports whether the recorded error was a timeout.
func (e *ReplayedError) Timeout() bool { return e.Kind == kindTimeout || e.Kind == kindDeadline }

// Temporary reports the same as Timeout (net.Error).
func (e *ReplayedError) Temporary() bool { return e.Timeout() }
