package llmtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// script is what both fake servers keep whatever their API: the queue of
// scripted replies, the recorded requests and the count of requests
// received. Its exported methods are the servers'.
type script[Request, Reply any] struct {
	count atomic.Int64
	// skipRecording keeps no requests, only their count.
	skipRecording bool

	mu       sync.Mutex
	queue    []Reply
	requests []Request
}

// Enqueue appends replies to the script; each valid request takes the next
// one.
func (s *script[Request, Reply]) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// Requests returns the recorded requests in arrival order. The returned
// values must not be modified.
func (s *script[Request, Reply]) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns the number of HTTP requests received, malformed or not.
func (s *script[Request, Reply]) Count() int { return int(s.count.Load()) }

// take returns the reply req gets: the next scripted one, else what
// respond answers, else exhausted.
func (s *script[Request, Reply]) take(req Request, respond func(Request) Reply, exhausted Reply) Reply {
	s.mu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		var zero Reply
		s.queue[0] = zero
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return r
	}
	s.mu.Unlock()
	if respond != nil {
		return respond(req)
	}
	return exhausted
}

// record keeps req, unless the server records none.
func (s *script[Request, Reply]) record(req Request) {
	if s.skipRecording {
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

// readRequest reads and decodes r's body; the error says which failed.
func readRequest[Request any](r *http.Request, decode func([]byte) (Request, error)) (Request, []byte, error) {
	var req Request
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return req, nil, fmt.Errorf("read body: %w", err)
	}
	if req, err = decode(body); err != nil {
		return req, nil, fmt.Errorf("decode body: %w", err)
	}
	return req, body, nil
}

// setHeaders adds a reply's extra headers and its Retry-After to h.
func setHeaders(h, extra http.Header, retryAfter string) {
	for k, vs := range extra {
		h[k] = append([]string(nil), vs...)
	}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
}

// writeBody writes a JSON answer (unless the reply set another type) with
// its full length declared; truncate sends only its first half, so the
// client sees an unexpected EOF.
func writeBody(w http.ResponseWriter, status int, body []byte, truncate bool) {
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if truncate {
		body = body[:len(body)/2]
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
