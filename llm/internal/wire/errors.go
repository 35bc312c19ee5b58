package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

// Redacted replaces the API key in text that Redact and RedactErr clean.
const Redacted = "[redacted]"

// Redact returns s with every occurrence of key replaced by Redacted; s
// itself if key is empty or absent. It is safe for concurrent use.
func Redact(s, key string) string {
	if key == "" || !strings.Contains(s, key) {
		return s
	}
	return strings.ReplaceAll(s, key, Redacted)
}

// RedactErr returns err, or, if its message contains key, a plain error
// with that message redacted (the chain below it is dropped, since any
// link may hold the key). It is safe for concurrent use.
func RedactErr(err error, key string) error {
	if err == nil || key == "" {
		return err
	}
	if msg := err.Error(); strings.Contains(msg, key) {
		return errors.New(Redact(msg, key))
	}
	return err
}

// RetryAfter returns the wait a server asked for in h: retry-after-ms
// (milliseconds, as OpenAI and Anthropic send) if it holds a positive
// number, else Retry-After in seconds or as an HTTP date after now; 0 if
// neither is present or usable. It is safe for concurrent use.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// CallContext is ctx bounded by timeout, for one call: ctx itself where
// its own deadline comes first, since a timer of the call's could then
// never be the one that ends it, and Interrupted, which asks ctx first,
// classifies the end the same either way.
func CallContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok && !deadline.After(time.Now().Add(timeout)) {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// Interrupted classifies a failed call by its contexts: ctx is the
// caller's, callCtx the call's own, ctx bounded by timeout. If ctx has
// ended the call was canceled; if only callCtx has, it timed out, which is
// transient. ok is false while both are live: the failure is something
// else. It is safe for concurrent use.
func Interrupted(ctx, callCtx context.Context, timeout time.Duration) (kind llm.ErrorKind, msg string, ok bool) {
	if err := ctx.Err(); err != nil {
		return llm.ErrCanceled, "caller context done: " + err.Error(), true
	}
	if callCtx.Err() != nil {
		return llm.ErrTransient, fmt.Sprintf("no answer within %v", timeout), true
	}
	return "", "", false
}

// Transport classifies err, the error of a call that no context ended and
// that brought no API error: resp is the HTTP response if one arrived
// (then its body could not be read or decoded). It returns the kind, a
// message, and the cause to wrap: err, with key redacted (see RedactErr).
//
//   - the connection closed (io.EOF, io.ErrUnexpectedEOF) before a
//     response: transient; after one, the body or its JSON ended early:
//     transient
//   - a response whose body is not the expected JSON (a *json.SyntaxError
//     or *json.UnmarshalTypeError): bad_response
//   - a network error (a net.Error or *net.OpError: refused, reset,
//     unreachable): transient
//   - any other error with a response (e.g. a body of another content
//     type): bad_response
//   - any other error without one: transient
//
// It is safe for concurrent use.
func Transport(err error, resp *http.Response, key string) (kind llm.ErrorKind, msg string, cause error) {
	cause = RedactErr(err, key)
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) && resp == nil:
		return llm.ErrTransient, "connection closed before an answer arrived", cause
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return llm.ErrTransient, "answer truncated: body or JSON ended early", cause
	case resp != nil && (errors.As(err, &syntaxErr) || errors.As(err, &typeErr)):
		return llm.ErrBadResponse, "undecodable answer body", cause
	case isNetError(err):
		return llm.ErrTransient, "network error: " + cause.Error(), cause
	case resp != nil:
		return llm.ErrBadResponse, "unusable answer body: " + cause.Error(), cause
	default:
		return llm.ErrTransient, "call failed: " + cause.Error(), cause
	}
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}
