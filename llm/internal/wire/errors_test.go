package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

const testKey = "sk-test-0123456789abcdef"

// refused is the error of a dial the server refused.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, key, want string
	}{
		{"no key", "token " + testKey, "", "token " + testKey},
		{"absent", "nothing secret", testKey, "nothing secret"},
		{"once", "bad key " + testKey + ".", testKey, "bad key [redacted]."},
		{"twice", testKey + "/" + testKey, testKey, "[redacted]/[redacted]"},
		{"empty text", "", testKey, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in, tt.key); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactErr(t *testing.T) {
	plain := errors.New("connection refused")
	leaky := fmt.Errorf("post https://x/?key=%s: %w", testKey, io.EOF)
	tests := []struct {
		name     string
		err      error
		key      string
		want     string // message; "" for a nil result
		same     bool   // err itself is returned
		keepsEOF bool   // the result still wraps io.EOF
	}{
		{"nil", nil, testKey, "", true, false},
		{"no key configured", leaky, "", leaky.Error(), true, true},
		{"key absent", plain, testKey, "connection refused", true, false},
		{"key present", leaky, testKey, "post https://x/?key=[redacted]: EOF", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactErr(tt.err, tt.key)
			if (got == tt.err) != tt.same {
				t.Errorf("RedactErr returned the error itself: %v, want %v", got == tt.err, tt.same)
			}
			msg := ""
			if got != nil {
				msg = got.Error()
			}
			if msg != tt.want {
				t.Errorf("message %q, want %q", msg, tt.want)
			}
			if errors.Is(got, io.EOF) != tt.keepsEOF {
				t.Errorf("wraps io.EOF: %v, want %v", !tt.keepsEOF, tt.keepsEOF)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"12"}}, 12 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"spaces", http.Header{"Retry-After": {" 3 "}}, 3 * time.Second},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"ms wins", http.Header{"Retry-After": {"12"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"ms alone", http.Header{"Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"fractional ms", http.Header{"Retry-After-Ms": {"0.5"}}, 500 * time.Microsecond},
		{"bad ms falls back", http.Header{"Retry-After": {"4"}, "Retry-After-Ms": {"soon"}}, 4 * time.Second},
		{"zero ms falls back", http.Header{"Retry-After": {"4"}, "Retry-After-Ms": {"0"}}, 4 * time.Second},
		{"huge ms falls back", http.Header{"Retry-After": {"4"}, "Retry-After-Ms": {"1e13"}}, 4 * time.Second},
		{"zero", http.Header{"Retry-After": {"0"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"huge", http.Header{"Retry-After": {"1e10"}}, 0},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.header, now); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestInterrupted(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	tests := []struct {
		name         string
		ctx, callCtx context.Context
		ok           bool
		kind         llm.ErrorKind
		msg          string
	}{
		{"both live", live, live, false, "", ""},
		{"caller canceled", canceled, canceled, true, llm.ErrCanceled, "caller context done: context canceled"},
		{"caller deadline", expired, expired, true, llm.ErrCanceled, "caller context done: context deadline exceeded"},
		{"call timeout", live, expired, true, llm.ErrTransient, "no answer within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg, ok := Interrupted(tt.ctx, tt.callCtx, 50*time.Millisecond)
			if ok != tt.ok || kind != tt.kind || msg != tt.msg {
				t.Errorf("Interrupted = %q, %q, %v; want %q, %q, %v", kind, msg, ok, tt.kind, tt.msg, tt.ok)
			}
		})
	}
}

// A call's context is the caller's where the caller's deadline comes
// first, and its own timeout otherwise; the call ends as a timeout only
// where its own came first (synctest's clock: no waiting).
func TestCallContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		soon, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ctx, done := CallContext(soon, time.Minute)
		defer done()
		if ctx != soon {
			t.Error("a caller whose deadline comes first got a timer of the call's")
		}
		for _, parent := range []context.Context{context.Background(), soon} {
			callCtx, done := CallContext(parent, 10*time.Millisecond)
			deadline, ok := callCtx.Deadline()
			if !ok || !deadline.Equal(time.Now().Add(10*time.Millisecond)) {
				t.Errorf("deadline %v, %v: want the call's own", deadline, ok)
			}
			<-callCtx.Done()
			if kind, _, _ := Interrupted(parent, callCtx, 10*time.Millisecond); kind != llm.ErrTransient {
				t.Errorf("the call's own timeout classified %q", kind)
			}
			done()
		}
		<-ctx.Done()
		if kind, _, _ := Interrupted(soon, ctx, time.Minute); kind != llm.ErrCanceled {
			t.Errorf("the caller's deadline classified %q", kind)
		}
	})
}

// timeoutError is a net.Error that is not a *net.OpError.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestTransport(t *testing.T) {
	resp := &http.Response{StatusCode: 200}
	var syntaxErr *json.SyntaxError
	if err := json.Unmarshal([]byte("<html>"), new(any)); !errors.As(err, &syntaxErr) {
		t.Fatalf("no syntax error from bad JSON: %v", err)
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal([]byte(`"text"`), new(int)); !errors.As(err, &typeErr) {
		t.Fatalf("no type error: %v", err)
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tests := []struct {
		name string
		err  error
		resp *http.Response
		kind llm.ErrorKind
		msg  string // the message, or its start when it ends in "..."
	}{
		{"closed before an answer", fmt.Errorf("post: %w", io.EOF), nil, llm.ErrTransient, "connection closed before an answer arrived"},
		{"closed early, unexpected EOF", io.ErrUnexpectedEOF, nil, llm.ErrTransient, "connection closed before an answer arrived"},
		{"empty body", io.EOF, resp, llm.ErrTransient, "answer truncated: body or JSON ended early"},
		{"truncated body", fmt.Errorf("error reading response body: %w", io.ErrUnexpectedEOF), resp, llm.ErrTransient, "answer truncated: body or JSON ended early"},
		{"bad syntax", fmt.Errorf("error parsing response json: %w", syntaxErr), resp, llm.ErrBadResponse, "undecodable answer body"},
		{"wrong type", typeErr, resp, llm.ErrBadResponse, "undecodable answer body"},
		{"syntax error without a response", syntaxErr, nil, llm.ErrTransient, "call failed: ..."},
		{"connection refused", fmt.Errorf("post: %w", refused), nil, llm.ErrTransient, "network error: post: dial tcp: connection refused"},
		{"connection reset", reset, resp, llm.ErrTransient, "network error: read tcp: connection reset by peer"},
		{"net.Error", timeoutError{}, nil, llm.ErrTransient, "network error: i/o timeout"},
		{"other content type", errors.New("expected destination type of 'string'"), resp, llm.ErrBadResponse, "unusable answer body: expected destination type of 'string'"},
		{"anything else", errors.New("boom"), nil, llm.ErrTransient, "call failed: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg, cause := Transport(tt.err, tt.resp, testKey)
			if kind != tt.kind {
				t.Errorf("kind = %s, want %s", kind, tt.kind)
			}
			if prefix, ok := strings.CutSuffix(tt.msg, "..."); ok {
				if !strings.HasPrefix(msg, prefix) {
					t.Errorf("message %q, want it to start with %q", msg, prefix)
				}
			} else if msg != tt.msg {
				t.Errorf("message %q, want %q", msg, tt.msg)
			}
			if cause != tt.err {
				t.Errorf("cause %v is not the error itself", cause)
			}
		})
	}
}

func TestTransportRedacts(t *testing.T) {
	resp := &http.Response{StatusCode: 200}
	tests := []struct {
		name string
		err  error
		resp *http.Response
		kind llm.ErrorKind
	}{
		{"network error", fmt.Errorf("post https://h/?key=%s: %w", testKey, refused), nil, llm.ErrTransient},
		{"unusable body", fmt.Errorf("bad answer for %s", testKey), resp, llm.ErrBadResponse},
		{"other", fmt.Errorf("failed with %s", testKey), nil, llm.ErrTransient},
		{"EOF", fmt.Errorf("key %s: %w", testKey, io.EOF), nil, llm.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg, cause := Transport(tt.err, tt.resp, testKey)
			if kind != tt.kind {
				t.Errorf("kind = %s, want %s: redaction must not change the class", kind, tt.kind)
			}
			if strings.Contains(msg, testKey) || strings.Contains(cause.Error(), testKey) {
				t.Errorf("key leaks: message %q, cause %q", msg, cause)
			}
			if !strings.Contains(cause.Error(), Redacted) {
				t.Errorf("cause %q: want the key replaced", cause)
			}
		})
	}
}
