package llmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

func req(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestScriptedPlaysInOrder(t *testing.T) {
	rateLimited := &llm.Error{Kind: llm.ErrRateLimited, Message: "slow down"}
	s := NewScripted(
		Text("first"),
		Fail(rateLimited),
		Func(func(_ context.Context, r llm.Request) (llm.Response, error) {
			return llm.Response{Text: "echo " + r.Messages[0].Content, Model: "fn-model"}, nil
		}),
		FailKind(llm.ErrAuth, "bad key"),
	)
	s.ProviderName, s.ModelName = "fake", "fake-1"
	s.Usage = llm.Usage{InputTokens: 10, OutputTokens: 2}
	ctx := context.Background()

	resp, err := s.Complete(ctx, req("a"))
	if err != nil || resp.Text != "first" || resp.Provider != "fake" || resp.Model != "fake-1" || resp.Usage != s.Usage {
		t.Errorf("call 1 = %+v, %v", resp, err)
	}
	if _, err := s.Complete(ctx, req("b")); err != rateLimited {
		t.Errorf("call 2 error = %v, want the scripted *llm.Error", err)
	}
	if resp, err := s.Complete(ctx, req("c")); err != nil || resp.Text != "echo c" || resp.Model != "fn-model" {
		t.Errorf("call 3 = %+v, %v", resp, err)
	}
	if _, err := s.Complete(ctx, req("d")); llm.KindOf(err) != llm.ErrAuth {
		t.Errorf("call 4 error = %v, want auth", err)
	}
	_, err = s.Complete(ctx, req("e"))
	if !errors.Is(err, ErrScriptExhausted) {
		t.Errorf("call 5 error = %v, want ErrScriptExhausted", err)
	}
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind.Retryable() || e.Provider != "fake" {
		t.Errorf("exhausted error = %#v, want a non-retryable *llm.Error naming the provider", err)
	}

	got := s.Requests()
	if len(got) != 5 || s.Calls() != 5 || s.Remaining() != 0 {
		t.Fatalf("recorded %d requests, Calls %d, Remaining %d", len(got), s.Calls(), s.Remaining())
	}
	for i, want := range []string{"a", "b", "c", "d", "e"} {
		if got[i].Messages[0].Content != want {
			t.Errorf("request %d = %q, want %q", i, got[i].Messages[0].Content, want)
		}
	}
}

func TestScriptedDefaultsAndIsolation(t *testing.T) {
	s := NewScripted(Text("x"))
	if s.Name() != DefaultProviderName || s.Model() != DefaultModelName {
		t.Errorf("defaults: %q %q", s.Name(), s.Model())
	}
	r := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "orig"}},
		Schema:   &llm.Schema{Name: "s", JSON: []byte(`{}`)},
	}
	if _, err := s.Complete(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Messages[0].Content = "changed"
	r.Schema.JSON[0] = '['
	rec := s.Requests()[0]
	if rec.Messages[0].Content != "orig" || string(rec.Schema.JSON) != "{}" {
		t.Errorf("record changed with the caller's request: %+v %s", rec.Messages, rec.Schema.JSON)
	}
}

func TestScriptedCanceled(t *testing.T) {
	s := NewScripted(Text("kept"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Complete(ctx, req("a"))
	if llm.KindOf(err) != llm.ErrCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want canceled", err)
	}
	if s.Remaining() != 1 || s.Calls() != 1 {
		t.Errorf("Remaining %d Calls %d, want 1 1", s.Remaining(), s.Calls())
	}
	if resp, err := s.Complete(context.Background(), req("b")); err != nil || resp.Text != "kept" {
		t.Errorf("after cancel: %+v %v", resp, err)
	}
}

func TestScriptedConcurrent(t *testing.T) {
	const n = 50
	s := NewScripted()
	for i := range n {
		s.Push(Text(fmt.Sprint(i)))
	}
	var wg sync.WaitGroup
	seen := make([]bool, n)
	var mu sync.Mutex
	for range n {
		wg.Go(func() {
			resp, err := s.Complete(context.Background(), req("x"))
			if err != nil {
				t.Error(err)
				return
			}
			var i int
			fmt.Sscan(resp.Text, &i)
			mu.Lock()
			seen[i] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, ok := range seen {
		if !ok {
			t.Errorf("reply %d never played", i)
		}
	}
	if s.Calls() != n {
		t.Errorf("Calls = %d", s.Calls())
	}
}

func TestScriptedProtocols(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{"q":"x"}`)}
	s := NewScripted(Text(`{"say":"hi"}`), ToolCalls("Looking.", call), ToolCalls("just text"))
	ctx := context.Background()

	resp, err := s.Complete(ctx, req("a"))
	if err != nil || resp.Protocol != llm.ProtocolJSON || resp.ToolCalls != nil {
		t.Errorf("Text: %+v %v", resp, err)
	}
	call.Arguments[2] = 'Q' // the script holds its own copy
	resp, err = s.Complete(ctx, req("b"))
	if err != nil || resp.Protocol != llm.ProtocolTools || resp.Text != "Looking." || len(resp.ToolCalls) != 1 ||
		resp.ToolCalls[0].ID != "c1" || resp.ToolCalls[0].Name != "search" || string(resp.ToolCalls[0].Arguments) != `{"q":"x"}` {
		t.Errorf("ToolCalls: %+v %v", resp, err)
	}
	resp, err = s.Complete(ctx, req("c"))
	if err != nil || resp.Protocol != llm.ProtocolTools || resp.Text != "just text" || resp.ToolCalls != nil {
		t.Errorf("ToolCalls without calls: %+v %v", resp, err)
	}
}

func TestScriptedRecordsTools(t *testing.T) {
	s := NewScripted(ToolCalls("ok"))
	r := req("a")
	r.Tools = []llm.ToolDef{{Name: "search", Description: "Find.", Parameters: []byte(`{"type":"object"}`)}}
	if _, err := s.Complete(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Tools[0].Name = "changed"
	r.Tools[0].Parameters[1] = 'X'
	rec := s.Requests()[0].Tools
	if len(rec) != 1 || rec[0].Name != "search" || rec[0].Description != "Find." || string(rec[0].Parameters) != `{"type":"object"}` {
		t.Errorf("recorded tools changed with the caller's: %+v", rec)
	}
}

func TestScriptedStreamsInPieces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScripted(ToolCalls("три слова тут", llm.ToolCall{ID: "1", Name: "n", Arguments: []byte(`{"x":1}`)}), Text("slow answer here"))
		s.Piece, s.PieceDelay = 4, time.Second
		var got []string
		var at []time.Duration
		start := time.Now()
		req := llm.Request{OnText: func(p string) { got = append(got, p); at = append(at, time.Since(start)) }}
		resp, err := s.Complete(context.Background(), req)
		if err != nil || resp.Text != "три слова тут" {
			t.Fatalf("Complete: %+v %v", resp, err)
		}
		if strings.Join(got, "|") != "три |слов|а ту|т" || at[3] != 3*time.Second {
			t.Errorf("pieces %q at %v; want 4 runes each, one a second", got, at)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		got = nil
		if _, err := s.Complete(ctx, req); llm.KindOf(err) != llm.ErrCanceled || len(got) != 2 {
			t.Errorf("a context ended midway: %v after %q, want canceled after two pieces", err, got)
		}
	})
}
