package cassette

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder is an http.RoundTripper that forwards every request to the next
// transport and writes the exchange, scrubbed, to one file in its
// directory (see the package comment for the format).
//
// The caller sees exactly what the next transport returned: the same
// status, headers, body bytes and errors. The request body is read whole
// before it is forwarded. The response body is copied to the file as the
// caller reads it; the file is written when the body reaches its end, fails,
// or is closed, whichever comes first. A body closed before its end is
// recorded as far as it was read, marked body_incomplete; the Recorder never
// reads more than the caller did. A transport error is recorded as an
// exchange with an error and returned unchanged. Sequence numbers are taken
// when a request starts, so file names follow the order of requests.
//
// A Recorder is safe for concurrent use. Writing a file never changes what
// the caller sees; failures to write are reported by Err.
type Recorder struct {
	dir   string
	next  http.RoundTripper
	scrub *scrubber
	seq   atomic.Uint64

	mu  sync.Mutex
	err error
}

var _ http.RoundTripper = (*Recorder)(nil)

// NewRecorder returns a Recorder that forwards to next
// (http.DefaultTransport when nil) and writes to dir. dir is created with
// mode 0700 if missing; if it already holds cassette files, numbering
// continues after the highest one, so a later replay sees both recordings
// in order. secrets are strings to scrub wherever they occur (API keys,
// tokens of tools that may show up in prompts); empty ones are ignored.
// It fails if dir cannot be created or read.
func NewRecorder(dir string, next http.RoundTripper, secrets ...string) (*Recorder, error) {
	if dir == "" {
		return nil, errors.New("cassette: new recorder: empty directory")
	}
	if next == nil {
		next = http.DefaultTransport
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cassette: new recorder: create %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cassette: new recorder: chmod %s: %w", dir, err)
		}
	case err != nil:
		return nil, fmt.Errorf("cassette: new recorder: %w", err)
	case !info.IsDir():
		return nil, fmt.Errorf("cassette: new recorder: %s is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cassette: new recorder: %w", err)
	}
	r := &Recorder{dir: dir, next: next, scrub: newScrubber(secrets)}
	for _, e := range entries {
		if n, ok := fileSeq(e.Name()); ok && n > r.seq.Load() {
			r.seq.Store(n)
		}
	}
	return r, nil
}

// Err returns the first failure to write a cassette file (wrapped with the
// file's path), or nil if every file so far was written.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// RoundTrip forwards req and records the exchange. It returns what the next
// transport returned; its own only error is a request body that cannot be
// read, which is returned without forwarding the request.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	seq := r.seq.Add(1)
	start := time.Now()
	rep := r.scrub.forRequest(req)

	body, err := readAllAndClose(req.Body)
	if err != nil {
		return nil, fmt.Errorf("cassette: record %s %s: read request body: %w", req.Method, rep.url(req.URL), err)
	}
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}

	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	ex := &exchangeFile{
		Version:    formatVersion,
		RecordedAt: start.UTC(),
		Request: requestRecord{
			Method:     method,
			URL:        rep.url(req.URL),
			Headers:    headerRecord(rep.header(req.Header)),
			bodyRecord: encodeBody(rep.bytes(body)),
		},
	}
	name := fileName(seq, rep.str(req.URL.Host), rep.str(req.URL.Path))

	resp, err := r.next.RoundTrip(out)
	ex.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		ex.Error = newErrorRecord(err, rep.str(err.Error()))
		r.save(name, ex)
		return resp, err
	}
	ex.Response = &responseRecord{Status: resp.StatusCode, Headers: headerRecord(rep.header(resp.Header))}
	if resp.Body == nil {
		r.save(name, ex)
		return resp, nil
	}
	resp.Body = &recordingBody{rc: resp.Body, finish: func(data []byte, readErr error) {
		ex.Response.bodyRecord = encodeBody(rep.bytes(data))
		switch {
		case readErr == io.EOF:
		case readErr == errClosedEarly:
			ex.Response.BodyIncomplete = true
		default:
			ex.Response.BodyError = newErrorRecord(readErr, rep.str(readErr.Error()))
		}
		r.save(name, ex)
	}}
	return resp, nil
}

// save writes one exchange file and remembers the first failure.
func (r *Recorder) save(name string, ex *exchangeFile) {
	data, err := marshalIndented(ex)
	if err == nil {
		err = writeAtomic(r.dir, name, data)
	}
	if err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = fmt.Errorf("cassette: write %s: %w", filepath.Join(r.dir, name), err)
		}
		r.mu.Unlock()
	}
}

// readAllAndClose reads and closes a request body; nil and http.NoBody give
// nil.
func readAllAndClose(rc io.ReadCloser) ([]byte, error) {
	if rc == nil || rc == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// errClosedEarly marks a response body closed before its end.
var errClosedEarly = errors.New("body closed before its end")

// recordingBody passes a response body through to the caller and keeps a
// copy; at the end, on a read error or on Close it hands the copy to finish
// exactly once. Read and Close may run concurrently (Close aborts a Read).
type recordingBody struct {
	rc     io.ReadCloser
	finish func(data []byte, readErr error)

	mu   sync.Mutex
	buf  bytes.Buffer
	done bool
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.buf.Write(p[:n])
		if err != nil {
			b.end(err)
		}
	}
	return n, err
}

func (b *recordingBody) Close() error {
	err := b.rc.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.end(errClosedEarly)
	}
	return err
}

// end finishes the recording; b.mu is held.
func (b *recordingBody) end(err error) {
	b.done = true
	b.finish(b.buf.Bytes(), err)
	b.buf = bytes.Buffer{}
}
