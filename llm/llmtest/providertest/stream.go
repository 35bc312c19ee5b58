package providertest

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/cassette"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// streamText holds what a stream cut anywhere must keep whole: multi-byte
// runes, JSON string escapes (quote, backslash, newline, tab) and a rune
// outside the Basic Multilingual Plane.
const streamText = "Привет, \"мир\"!\nЭто — ответ ✓ with a \\ backslash,\ta tab and 😀."

// CompleteStreamed calls p with req and OnText set, and returns what
// Complete returned and what OnText received, in order.
func CompleteStreamed(p llm.Provider, req llm.Request) (llm.Response, []string, error) {
	var got []string
	req.OnText = func(s string) { got = append(got, s) }
	resp, err := p.Complete(context.Background(), req)
	return resp, got, err
}

// StreamBoth makes req on p once plainly and once streamed for every
// chunking — queue queues the answer, cut as its argument says (nil for
// the plain call) — checks each streamed Response is the plain one, and
// returns the plain Response and what OnText received on each streamed
// call.
func StreamBoth(t *testing.T, p llm.Provider, queue func(*llmtest.Chunking), req llm.Request, chunkings ...llmtest.Chunking) (llm.Response, []string) {
	t.Helper()
	queue(nil)
	req.OnText = nil
	plain, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("plain Complete: %v", err)
	}
	var texts []string
	for _, c := range chunkings {
		queue(&c)
		var pieces []string
		req.OnText = func(s string) { pieces = append(pieces, s) }
		got, err := p.Complete(context.Background(), req)
		if err != nil {
			t.Fatalf("streamed Complete (%+v): %v", c, err)
		}
		if !reflect.DeepEqual(got, plain) {
			t.Errorf("streamed %+v\nwant     %+v", got, plain)
		}
		texts = append(texts, strings.Join(pieces, ""))
	}
	return plain, texts
}

// collector gathers what OnText receives, with the time of the first
// piece.
type collector struct {
	mu     sync.Mutex
	pieces []string
	first  time.Time
}

func (c *collector) onText(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pieces) == 0 {
		c.first = time.Now()
	}
	c.pieces = append(c.pieces, s)
}

func (c *collector) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.pieces, "")
}

func streamRequest(c *collector) llm.Request {
	req := UserRequest("hi")
	req.OnText = c.onText
	return req
}

// sameAnswer reports how got differs from the plain call's answer, or "".
func sameAnswer(got, want llm.Response) string {
	switch {
	case got.Text != want.Text:
		return "text " + got.Text + ", want " + want.Text
	case got.Model != want.Model || got.Provider != want.Provider || got.Protocol != want.Protocol:
		return "model, provider or protocol differ"
	case got.Usage != want.Usage:
		return "usage differs"
	case got.FinishReason != want.FinishReason:
		return "finish reason " + got.FinishReason + ", want " + want.FinishReason
	case !reflect.DeepEqual(got.ToolCalls, want.ToolCalls):
		return "tool calls differ"
	}
	return ""
}

func testStreamMatchesPlain(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	p := newProvider(t, s, f.URL(), Key, Options{})
	f.Text(streamText, 0)
	plain, err := p.Complete(context.Background(), UserRequest("hi"))
	if err != nil {
		t.Fatalf("plain Complete: %v", err)
	}
	for _, c := range []llmtest.Chunking{
		{},
		{Piece: 1, WriteSize: 1}, // every write boundary: inside each rune and each escape
		{Piece: 5, WriteSize: 7},
		{Piece: 3, WriteSize: 2},
	} {
		f.Stream(streamText, c)
		var col collector
		got, err := p.Complete(context.Background(), streamRequest(&col))
		if err != nil {
			t.Fatalf("streamed Complete (%+v): %v", c, err)
		}
		if d := sameAnswer(got, plain); d != "" {
			t.Errorf("streamed answer (%+v): %s", c, d)
		}
		if col.text() != streamText {
			t.Errorf("OnText pieces (%+v) join to %q, want %q", c, col.text(), streamText)
		}
		if c.Piece == 1 && len(col.pieces) < 10 {
			t.Errorf("OnText called %d times for one rune per delta", len(col.pieces))
		}
	}
}

func testStreamBroken(t *testing.T, s Suite) {
	long := strings.Repeat("a long answer, ", 150)
	for _, tc := range []struct {
		name     string
		queue    func(f Fake)
		kind     llm.ErrorKind
		someText bool
	}{
		{"cut before any text", func(f Fake) { f.Stream(long, llmtest.Chunking{CutAfter: 5}) }, llm.ErrTransient, false},
		{"cut halfway", func(f Fake) { f.Stream(long, llmtest.Chunking{CutAfter: 3000}) }, llm.ErrTransient, true},
		{"error event", func(f Fake) { f.Stream(long, llmtest.Chunking{ErrorAfter: 6}) }, llm.ErrTransient, true},
		{"malformed event", func(f Fake) { f.RawStream([]byte("data: {\"type\": oops\n\n"), llmtest.Chunking{}) }, llm.ErrBadResponse, false},
		{"no end", func(f Fake) { f.RawStream([]byte(": keep-alive\n\n"), llmtest.Chunking{}) }, llm.ErrTransient, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := s.Fake(t, false)
			p := newProvider(t, s, f.URL(), Key, Options{})
			tc.queue(f)
			var col collector
			_, err := p.Complete(context.Background(), streamRequest(&col))
			if e := asLLMError(t, err, p); e.Kind != tc.kind {
				t.Errorf("kind = %s, want %s (%v)", e.Kind, tc.kind, err)
			}
			if got := col.text() != ""; got != tc.someText {
				t.Errorf("OnText received %q; want some text: %v", col.text(), tc.someText)
			}
			if !strings.HasPrefix(long, col.text()) {
				t.Errorf("OnText received %q, not the start of the answer", col.text())
			}
			if n := f.Count(); n != 1 {
				t.Errorf("server saw %d requests, want 1: a provider never retries", n)
			}
		})
	}
}

// fiftySeconds is an answer of 50 pieces, one a second.
var fiftySeconds = strings.Repeat("word ", 50)

func testStreamSlowAnswer(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, s, f.URL(), Key, Options{HTTPClient: &http.Client{Transport: llmtest.InProcess(f.Handler())}})
		f.Stream(fiftySeconds, llmtest.Chunking{Piece: 5, Delay: time.Second})
		var col collector
		start := time.Now()
		resp, err := p.Complete(context.Background(), streamRequest(&col))
		took := time.Since(start)
		if err != nil {
			t.Fatalf("a 50-second answer with a chunk every second, default limits: %v", err)
		}
		if resp.Text != fiftySeconds || col.text() != fiftySeconds {
			t.Errorf("text %q, OnText %q; want %q", resp.Text, col.text(), fiftySeconds)
		}
		if took < 50*time.Second {
			t.Errorf("the answer took %v, want at least 50s (the fake's pace)", took)
		}
		if first := col.first.Sub(start); first > 5*time.Second {
			t.Errorf("first piece after %v: OnText must see pieces as they arrive", first)
		}
	})
}

func testStreamTimeouts(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	for _, tc := range []struct {
		name   string
		limits llm.StreamLimits
		c      llmtest.Chunking
		text   string
		msg    string
		within time.Duration
	}{
		{"first token", llm.StreamLimits{FirstToken: 5 * time.Second}, llmtest.Chunking{FirstDelay: 6 * time.Second}, "late", "first token", 5 * time.Second},
		{"silence", llm.StreamLimits{Chunk: 3 * time.Second}, llmtest.Chunking{Piece: 4, StallAfter: 6, Stall: 4 * time.Second}, fiftySeconds, "silent", 3 * time.Second},
		{"ceiling", llm.StreamLimits{FirstToken: 3 * time.Second, Chunk: 2 * time.Second, MinTokenRate: 1000},
			llmtest.Chunking{Piece: 1, Delay: time.Second}, fiftySeconds, "not complete", 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProvider(t, s, f.URL(), Key, Options{Stream: tc.limits, HTTPClient: &http.Client{Transport: llmtest.InProcess(f.Handler())}})
				f.Stream(tc.text, tc.c)
				var col collector
				req := streamRequest(&col)
				req.MaxTokens = 1000
				start := time.Now()
				_, err := p.Complete(context.Background(), req)
				took := time.Since(start)
				e := asLLMError(t, err, p)
				if e.Kind != llm.ErrTransient || !strings.Contains(e.Message, tc.msg) {
					t.Errorf("error %v: want transient, saying %q", err, tc.msg)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
				}
				if took > tc.within+time.Second {
					t.Errorf("the call ended after %v, want about %v", took, tc.within)
				}
			})
		})
	}
}

func testStreamChain(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	newChain := func(t *testing.T) *llm.Chain {
		client := &http.Client{Transport: llmtest.InProcess(f.Handler())}
		var entries []llm.ChainEntry
		for range 2 {
			entries = append(entries, llm.ChainEntry{Provider: newProvider(t, s, f.URL(), Key, Options{HTTPClient: client})})
		}
		c, err := llm.NewChain(llm.ChainConfig{Entries: entries})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("silent before the first token falls over", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			chain := newChain(t)
			before := f.Count()
			silent := llmtest.Chunking{FirstDelay: llm.DefaultFirstTokenTimeout + time.Second}
			f.Stream("never", silent)
			f.Stream("never", silent)
			f.Stream(streamText, llmtest.Chunking{})
			var col collector
			resp, err := chain.Complete(context.Background(), streamRequest(&col))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Text != streamText || col.text() != streamText {
				t.Errorf("text %q, OnText %q; want %q from the second model", resp.Text, col.text(), streamText)
			}
			var kinds []string
			for _, a := range resp.Attempts {
				kinds = append(kinds, a.Kind)
			}
			if want := []string{llm.AttemptFirst, llm.AttemptRetry, llm.AttemptFallback}; !reflect.DeepEqual(kinds, want) {
				t.Errorf("attempts %v, want %v", kinds, want)
			}
			if n := f.Count() - before; n != 3 {
				t.Errorf("server saw %d requests, want 3", n)
			}
		})
	})
	t.Run("silent after a piece reached the reader is not retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			chain := newChain(t)
			before := f.Count()
			f.Stream(fiftySeconds, llmtest.Chunking{Piece: 5, StallAfter: 6, Stall: llm.DefaultChunkTimeout + time.Second})
			var col collector
			_, err := chain.Complete(context.Background(), streamRequest(&col))
			if k := llm.KindOf(err); k != llm.ErrTransient {
				t.Fatalf("kind %s (%v), want transient", k, err)
			}
			if col.text() == "" {
				t.Fatal("OnText received nothing")
			}
			if n := f.Count() - before; n != 1 {
				t.Errorf("server saw %d requests, want 1: no retry or fallback after text reached the reader", n)
			}
			var le *llm.Error
			if errors.As(err, &le) && (len(le.Attempts) != 1 || !strings.Contains(le.Attempts[0].Note, "already reached")) {
				t.Errorf("attempts %+v: want one, noting why there was no retry", le.Attempts)
			}
		})
	})
}

// testStreamCassette records a streamed answer and a stream cut halfway,
// then replays both: the same Responses, errors and OnText pieces.
func testStreamCassette(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	f.Stream(streamText, llmtest.Chunking{Piece: 2, WriteSize: 3})
	f.Stream(strings.Repeat("cut short ", 100), llmtest.Chunking{CutAfter: 2000})
	dir := t.TempDir()
	rec, err := cassette.NewRecorder(dir, http.DefaultTransport, Key)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		resp   llm.Response
		pieces []string
		kind   llm.ErrorKind
	}
	run := func(rt http.RoundTripper) []outcome {
		p := newProvider(t, s, f.URL(), Key, Options{HTTPClient: &http.Client{Transport: rt}})
		var out []outcome
		for range 2 {
			var o outcome
			req := UserRequest("hi")
			req.OnText = func(s string) { o.pieces = append(o.pieces, s) }
			resp, err := p.Complete(context.Background(), req)
			o.resp = resp
			if err != nil {
				o.kind = llm.KindOf(err)
			}
			out = append(out, o)
		}
		return out
	}
	live := run(rec)
	f.Close()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if live[0].kind != "" || live[0].resp.Text != streamText || live[1].kind != llm.ErrTransient || len(live[1].pieces) == 0 {
		t.Fatalf("live calls: %+v", live)
	}
	rp, err := cassette.NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	replayed := run(rp)
	for i := range live {
		if !reflect.DeepEqual(live[i], replayed[i]) {
			t.Errorf("call %d:\nlive     %+v\nreplayed %+v", i, live[i], replayed[i])
		}
	}
}

// testStreamReusesConnections checks that a finished stream gives its
// connection back to the pool.
func testStreamReusesConnections(t *testing.T, s Suite) {
	f := s.Fake(t, false)
	var dials atomic.Int64
	p := newProvider(t, s, f.URL(), Key, Options{HTTPClient: llmtest.CountingClient(&dials)})
	for range 5 {
		f.Stream("streamed", llmtest.Chunking{})
		var col collector
		if _, err := p.Complete(context.Background(), streamRequest(&col)); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("5 streamed calls dialed %d connections, want 1: a finished stream returns its connection", n)
	}
}
