// Package providertest is the conformance suite every llm.Provider
// implementation runs, on the model of store/storetest: Run takes a
// provider against a fake server of its wire format (llm/llmtest) and
// tries to break the contract llm.Provider states — errors are *llm.Error
// naming the provider and model, classified by Kind (a wrong key is
// ErrAuth, a timeout or a refused connection ErrTransient, the caller's own
// context ErrCanceled), the key never appears in an error, a provider never
// retries on its own, and concurrent calls do not mix. Streamed calls
// (Request.OnText) return the Response a plain call would, hand OnText the
// text in order however the body is cut, fail as provider errors when the
// stream breaks, and keep to their stream limits (tests on the fake clock
// of testing/synctest).
//
// It holds the suite and the Fake contract; the fakes themselves live in
// llm/llmtest and the adapters in each provider's tests.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// Key is the API key the fake expects.
const Key = "sk-conformance-0123456789abcdef"

// Fake is a loopback server of one wire format, expecting Key.
type Fake interface {
	URL() string
	// Text queues an answer with text, sent after delay.
	Text(text string, delay time.Duration)
	// Error queues an error answer of the wire format with status and
	// message.
	Error(status int, message string)
	// Stream queues an answer with text, streamed as c says when the
	// request asks for a stream.
	Stream(text string, c llmtest.Chunking)
	// RawStream queues a 200 text/event-stream answer whose body is body,
	// cut as c says.
	RawStream(body []byte, c llmtest.Chunking)
	// Handler serves the fake in process (llmtest.InProcess).
	Handler() http.Handler
	// Count is how many requests reached the server.
	Count() int
	Close()
}

// Suite is what Run needs of one provider implementation.
type Suite struct {
	// Fake starts the fake of the provider's wire format; with echo, it
	// answers every request with the text of its last user message.
	Fake func(t *testing.T, echo bool) Fake
	// New makes the provider under test against baseURL, with key and the
	// settings o gives.
	New func(baseURL, key string, o Options) (llm.Provider, error)
}

// Options are the settings of a provider under test that the suite varies;
// a zero field means the provider's default.
type Options struct {
	// Timeout is the per-call timeout.
	Timeout time.Duration
	// Stream is the limits of streamed calls.
	Stream llm.StreamLimits
	// HTTPClient is the client the provider calls with.
	HTTPClient *http.Client
}

// Run runs the suite.
func Run(t *testing.T, s Suite) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s Suite)
	}{
		{"WrongKey", testWrongKey},
		{"KeyNotLeaked", testKeyNotLeaked},
		{"Timeout", testTimeout},
		{"Canceled", testCanceled},
		{"ConnectionRefused", testConnectionRefused},
		{"Concurrent", testConcurrent},
		{"StreamMatchesPlain", testStreamMatchesPlain},
		{"StreamBroken", testStreamBroken},
		{"StreamSlowAnswer", testStreamSlowAnswer},
		{"StreamTimeouts", testStreamTimeouts},
		{"StreamChain", testStreamChain},
		{"StreamCassette", testStreamCassette},
		{"StreamReusesConnections", testStreamReusesConnections},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s) })
	}
}

// UserRequest is a request of one user message, text.
func UserRequest(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// MustNew makes a provider with newFn, a provider package's New, failing
// the test or benchmark if it refuses cfg.
func MustNew[C, P any](tb testing.TB, newFn func(C) (P, error), cfg C) P {
	tb.Helper()
	p, err := newFn(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return p
}

// RejectsConfigs checks that newFn, a provider package's New, refuses each
// of the configurations, one subtest a name.
func RejectsConfigs[C, P any](t *testing.T, newFn func(C) (P, error), bad map[string]C) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		cfg := bad[name]
		t.Run(name, func(t *testing.T) {
			if _, err := newFn(cfg); err == nil {
				t.Errorf("New(%+v) succeeded, want an error", cfg)
			}
		})
	}
}

// CheckSharedClient checks that c, the client a provider package shares
// between its providers, keeps enough idle connections per host for many
// concurrent calls to one API.
func CheckSharedClient(t *testing.T, c *http.Client) {
	t.Helper()
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.MaxIdleConnsPerHost < 64 {
		t.Errorf("shared client transport %T does not keep >= 64 idle connections per host", c.Transport)
	}
}

func newProvider(t *testing.T, s Suite, url, key string, o Options) llm.Provider {
	t.Helper()
	p, err := s.New(url, key, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// AsLLMError asserts err is an *llm.Error naming p, with key appearing
// nowhere in it or in what it wraps, and returns it.
func AsLLMError(t *testing.T, err error, p llm.Provider, key string) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	if e.Provider != p.Name() || e.Model != p.Model() {
		t.Errorf("error names %q/%q, want %q/%q", e.Provider, e.Model, p.Name(), p.Model())
	}
	for err := error(e); err != nil; err = errors.Unwrap(err) {
		if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v", err), key) {
			t.Errorf("error leaks the API key: %v", err)
		}
	}
	return e
}

func asLLMError(t *testing.T, err error, p llm.Provider) *llm.Error {
	t.Helper()
	return AsLLMError(t, err, p, Key)
}

// CheckError asserts err is an *llm.Error naming p, not leaking key, of
// kind and status, with a message, and asking to wait retryAfter (within
// 2s, for dates; zero means no wait); it returns the error.
func CheckError(t *testing.T, err error, p llm.Provider, key string, kind llm.ErrorKind, status int, retryAfter time.Duration) *llm.Error {
	t.Helper()
	e := AsLLMError(t, err, p, key)
	if e.Kind != kind {
		t.Errorf("kind = %s, want %s (%v)", e.Kind, kind, err)
	}
	if e.Status != status {
		t.Errorf("status = %d, want %d", e.Status, status)
	}
	if d := e.RetryAfter - retryAfter; d < -2*time.Second || d > 2*time.Second ||
		(retryAfter == 0) != (e.RetryAfter == 0) {
		t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, retryAfter)
	}
	if e.Message == "" {
		t.Errorf("empty message")
	}
	return e
}

// JSONEqual reports whether two JSON documents are equal as values.
func JSONEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("decode want %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func testWrongKey(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	p := newProvider(t, s, f.URL(), "sk-wrong-key", Options{})
	_, err := p.Complete(context.Background(), UserRequest("hi"))
	if k := llm.KindOf(err); k != llm.ErrAuth {
		t.Errorf("kind = %s, want auth (%v)", k, err)
	}
}

func testKeyNotLeaked(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	p := newProvider(t, s, f.URL(), Key, Options{})
	f.Error(401, "Incorrect API key provided: "+Key+".")
	_, err := p.Complete(context.Background(), UserRequest("hi"))
	if e := asLLMError(t, err, p); !strings.Contains(e.Message, "[redacted]") {
		t.Errorf("message %q: want the key replaced", e.Message)
	}
}

func testTimeout(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	p := newProvider(t, s, f.URL(), Key, Options{Timeout: 50 * time.Millisecond})
	f.Text("slow", 5*time.Second)
	start := time.Now()
	_, err := p.Complete(context.Background(), UserRequest("hi"))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Complete took %v with a 50ms timeout", d)
	}
	if e := asLLMError(t, err, p); e.Kind != llm.ErrTransient {
		t.Errorf("kind = %s, want transient (%v)", e.Kind, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	if n := f.Count(); n != 1 {
		t.Errorf("server saw %d requests, want 1: a provider never retries", n)
	}
}

func testCanceled(t *testing.T, s Suite) {
	t.Run("during the call", func(t *testing.T) {
		f := s.Fake(t, false)
		p := newProvider(t, s, f.URL(), Key, Options{})
		f.Text("slow", 5*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := p.Complete(ctx, UserRequest("hi"))
		if e := asLLMError(t, err, p); e.Kind != llm.ErrCanceled {
			t.Errorf("kind = %s, want canceled (%v)", e.Kind, err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	})
	t.Run("before the call", func(t *testing.T) {
		f := s.Fake(t, false)
		p := newProvider(t, s, f.URL(), Key, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Complete(ctx, UserRequest("hi"))
		if e := asLLMError(t, err, p); e.Kind != llm.ErrCanceled {
			t.Errorf("kind = %s, want canceled (%v)", e.Kind, err)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		f := s.Fake(t, false)
		p := newProvider(t, s, f.URL(), Key, Options{})
		f.Text("slow", 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := p.Complete(ctx, UserRequest("hi"))
		if e := asLLMError(t, err, p); e.Kind != llm.ErrCanceled {
			t.Errorf("kind = %s, want canceled: the caller's context ended (%v)", e.Kind, err)
		}
	})
}

func testConnectionRefused(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	url := f.URL()
	f.Close()
	p := newProvider(t, s, url, Key, Options{})
	_, err := p.Complete(context.Background(), UserRequest("hi"))
	if e := asLLMError(t, err, p); e.Kind != llm.ErrTransient {
		t.Errorf("kind = %s, want transient (%v)", e.Kind, err)
	}
}

func testConcurrent(t *testing.T, s Suite) {
	f := s.Fake(t, true)
	p := newProvider(t, s, f.URL(), Key, Options{})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			msg := fmt.Sprintf("m%d", i)
			resp, err := p.Complete(context.Background(), UserRequest(msg))
			if err != nil {
				t.Errorf("Complete %d: %v", i, err)
				return
			}
			if resp.Text != msg {
				t.Errorf("Complete %d: text %q, want %q", i, resp.Text, msg)
			}
		})
	}
	wg.Wait()
	if n := f.Count(); n != 32 {
		t.Errorf("server saw %d requests, want 32", n)
	}
}

// OpenAIFake is the Fake of the OpenAI Chat Completions wire format.
func OpenAIFake(t *testing.T, echo bool) Fake {
	cfg := llmtest.ServerConfig{APIKey: Key}
	if echo {
		cfg.Respond = func(r *llmtest.ChatRequest) llmtest.HTTPReply {
			return llmtest.HTTPReply{Content: r.Messages[len(r.Messages)-1].Content}
		}
	}
	srv := llmtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	return openAIFake{srv}
}

type openAIFake struct{ *llmtest.Server }

func (f openAIFake) URL() string { return f.Server.URL }
func (f openAIFake) Text(text string, delay time.Duration) {
	f.Enqueue(llmtest.HTTPReply{Content: text, Delay: delay})
}
func (f openAIFake) Error(status int, message string) {
	f.Enqueue(llmtest.HTTPReply{Status: status, ErrorMessage: message, ErrorCode: "error"})
}
func (f openAIFake) Stream(text string, c llmtest.Chunking) {
	f.Enqueue(llmtest.HTTPReply{Content: text, Chunking: &c})
}
func (f openAIFake) RawStream(body []byte, c llmtest.Chunking) {
	f.Enqueue(llmtest.HTTPReply{Body: body, Chunking: &c, Header: http.Header{"Content-Type": {"text/event-stream"}}})
}

// AnthropicFake is the Fake of the Anthropic Messages wire format.
func AnthropicFake(t *testing.T, echo bool) Fake {
	cfg := llmtest.AnthropicServerConfig{APIKey: Key}
	if echo {
		cfg.Respond = func(r *llmtest.AnthropicRequest) llmtest.AnthropicReply {
			return llmtest.AnthropicReply{Text: r.Messages[len(r.Messages)-1].Text()}
		}
	}
	srv := llmtest.NewAnthropicServer(cfg)
	t.Cleanup(srv.Close)
	return anthropicFake{srv}
}

type anthropicFake struct{ *llmtest.AnthropicServer }

func (f anthropicFake) URL() string { return f.AnthropicServer.URL }
func (f anthropicFake) Text(text string, delay time.Duration) {
	f.Enqueue(llmtest.AnthropicReply{Text: text, Delay: delay})
}
func (f anthropicFake) Error(status int, message string) {
	f.Enqueue(llmtest.AnthropicReply{Status: status, ErrorMessage: message})
}
func (f anthropicFake) Stream(text string, c llmtest.Chunking) {
	f.Enqueue(llmtest.AnthropicReply{Text: text, Chunking: &c})
}
func (f anthropicFake) RawStream(body []byte, c llmtest.Chunking) {
	f.Enqueue(llmtest.AnthropicReply{Body: body, Chunking: &c, Header: http.Header{"Content-Type": {"text/event-stream"}}})
}
