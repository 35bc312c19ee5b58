package llm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// plainOnly hides a provider's Streamer: a provider that cannot stream.
type plainOnly struct{ llm.Provider }

// sawOnText records whether the provider was called with OnText.
type sawOnText struct {
	llm.Provider
	calls []bool
}

func (s *sawOnText) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	s.calls = append(s.calls, req.OnText != nil)
	return s.Provider.Complete(ctx, req)
}

func collect(req *llm.Request) *[]string {
	var got []string
	req.OnText = func(s string) { got = append(got, s) }
	return &got
}

func TestChainStreams(t *testing.T) {
	ft := &fakeTime{}
	m := newModel("p", "m")
	m.Piece = 3
	m.Push(llmtest.Text(`{"say":"привет"}`))
	c := newChain(t, ft, 0, llm.ChainEntry{Provider: m})
	req := llm.Request{}
	got := collect(&req)
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"s`, `ay"`, `:"п`, `рив`, `ет"`, `}`}
	if strings.Join(*got, "|") != strings.Join(want, "|") || resp.Text != `{"say":"привет"}` {
		t.Errorf("OnText got %q, want %q", *got, want)
	}
}

func TestChainStreamsWholeTextForPlainProviders(t *testing.T) {
	ft := &fakeTime{}
	m := newModel("p", "m")
	m.Push(llmtest.ToolCalls("Ищу.", llm.ToolCall{ID: "1", Name: "search", Arguments: []byte(`{"q":"x"}`)}))
	saw := &sawOnText{Provider: plainOnly{m}}
	c := newChain(t, ft, 0, llm.ChainEntry{Provider: saw})
	req := llm.Request{}
	got := collect(&req)
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(saw.calls) != 1 || saw.calls[0] {
		t.Errorf("a provider that cannot stream was called with OnText: %v", saw.calls)
	}
	if strings.Join(*got, "|") != "Ищу." {
		t.Errorf("OnText got %q, want the whole text once", *got)
	}
}

func TestChainNoRetryAfterDelivery(t *testing.T) {
	partial := llmtest.Func(func(_ context.Context, req llm.Request) (llm.Response, error) {
		req.OnText("Half an ans")
		return llm.Response{}, &llm.Error{Kind: llm.ErrTransient, Message: "stream cut"}
	})
	silentFail := llmtest.Func(func(_ context.Context, req llm.Request) (llm.Response, error) {
		req.OnText("") // an empty piece delivers nothing
		return llm.Response{}, &llm.Error{Kind: llm.ErrTransient, Message: "no first token"}
	})
	for _, tc := range []struct {
		name      string
		first     llmtest.Reply
		wantTrail string
		wantText  string
		wantErr   bool
	}{
		{"failure after a piece is returned", partial, "first:m1:transient", "Half an ans", true},
		{"failure before any piece is retried", silentFail, "first:m1:transient retry:m1", "ok", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTime{}
			m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
			m1.Push(tc.first, llmtest.Text("ok"))
			m2.Push(llmtest.Text("second"))
			c := newChain(t, ft, 0, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
			req := llm.Request{}
			got := collect(&req)
			resp, err := c.Complete(context.Background(), req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error: %v", err, tc.wantErr)
			}
			atts := attemptsOf(resp, err)
			if k := kinds(atts); k != tc.wantTrail {
				t.Errorf("attempts %s, want %s", k, tc.wantTrail)
			}
			if s := strings.Join(*got, ""); s != tc.wantText {
				t.Errorf("OnText got %q, want %q", s, tc.wantText)
			}
			if tc.wantErr && !strings.Contains(atts[len(atts)-1].Note, "already reached the reader") {
				t.Errorf("note %q does not say why nothing was retried", atts[len(atts)-1].Note)
			}
			if m2.Calls() != 0 {
				t.Errorf("second model called %d times", m2.Calls())
			}
		})
	}
}

func TestStreamLimitsCeiling(t *testing.T) {
	for _, tc := range []struct {
		l         llm.StreamLimits
		maxTokens int
		want      time.Duration
	}{
		{llm.StreamLimits{}, 1000, 160 * time.Second},
		{llm.StreamLimits{}, 4000, 460 * time.Second},
		{llm.StreamLimits{}, 0, 60*time.Second + 409600*time.Millisecond},
		{llm.StreamLimits{FirstToken: 10 * time.Second, MinTokenRate: 50}, 500, 20 * time.Second},
	} {
		if got := tc.l.Ceiling(tc.maxTokens); got != tc.want {
			t.Errorf("%+v.Ceiling(%d) = %v, want %v", tc.l, tc.maxTokens, got, tc.want)
		}
	}
	if err := (llm.StreamLimits{Chunk: -time.Second}).Check(); err == nil {
		t.Error("a negative chunk timeout passes Check")
	}
}
