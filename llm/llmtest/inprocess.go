package llmtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Handler returns the server's handler, to serve it in process (see
// InProcess).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Handler returns the server's handler, to serve it in process (see
// InProcess).
func (s *AnthropicServer) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// InProcess returns an http.RoundTripper that serves every request with h
// in the caller's process, through an in-memory pipe and no socket: the
// answer's body is read as h writes it. Unlike a loopback connection, a
// pipe blocks durably, so tests can run a slow fake model inside a
// testing/synctest bubble, whose clock then moves on its own. A handler
// that aborts (panics, as on a connection cut) ends the body with
// io.ErrUnexpectedEOF, or fails the round trip if nothing was sent. Safe
// for concurrent use.
func InProcess(h http.Handler) http.RoundTripper { return inProcess{h} }

type inProcess struct{ h http.Handler }

// errAborted is the round trip's error when the handler aborted before
// answering, as a closed connection.
var errAborted = errors.New("llmtest: connection closed before an answer: " + io.ErrUnexpectedEOF.Error())

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	sreq := req.Clone(req.Context())
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:1"
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				rw.aborted.Store(true)
				rw.start()
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			}
			rw.start()
			_ = pw.Close()
		}()
		t.h.ServeHTTP(rw, sreq)
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	if !rw.wrote && rw.aborted.Load() {
		return nil, errAborted
	}
	stop := context.AfterFunc(req.Context(), func() { pr.CloseWithError(req.Context().Err()) })
	return &http.Response{
		Status: http.StatusText(rw.status), StatusCode: rw.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: &pipeBody{pr, stop}, ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the http.ResponseWriter of an in-process answer.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	status int
	once   sync.Once
	ready  chan struct{}
	// wrote says the header went out (set before ready closes, read
	// after); aborted that the handler panicked.
	wrote   bool
	aborted atomic.Bool
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status, w.wrote, w.sent = status, true, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: every write reaches the reader at once.
func (w *pipeWriter) Flush() {}

// start lets the round trip go on when the handler ended without writing.
func (w *pipeWriter) start() {
	w.once.Do(func() {
		w.status, w.sent = http.StatusOK, w.header.Clone()
		close(w.ready)
	})
}

type pipeBody struct {
	*io.PipeReader
	stop func() bool
}

func (b *pipeBody) Close() error {
	b.stop()
	return b.PipeReader.Close()
}

// CountingClient returns a client with a transport like the default one
// that adds one to dials for every connection it opens, so tests can check
// that calls reuse connections. Safe for concurrent use.
func CountingClient(dials *atomic.Int64) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}
