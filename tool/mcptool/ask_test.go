package mcptool_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/mcptool"
)

// scriptedLive answers questions from a script and records what it was
// shown; a nil answer means "no answer" (the wait runs out).
type scriptedLive struct {
	mu        sync.Mutex
	answers   []*chat.Answer
	questions []chat.Question
	progress  []chat.Progress
}

func (l *scriptedLive) Progress(p chat.Progress) {
	l.mu.Lock()
	l.progress = append(l.progress, p)
	l.mu.Unlock()
}

func (l *scriptedLive) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	l.mu.Lock()
	l.questions = append(l.questions, q)
	var a *chat.Answer
	if len(l.answers) > 0 {
		a, l.answers = l.answers[0], l.answers[1:]
	}
	l.mu.Unlock()
	if a == nil {
		<-ctx.Done()
		return chat.Answer{}, ctx.Err()
	}
	return *a, nil
}

func (l *scriptedLive) asked() []chat.Question {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]chat.Question(nil), l.questions...)
}

func (l *scriptedLive) shownProgress() []chat.Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]chat.Progress(nil), l.progress...)
}

// liveSession is a tool session on a channel's Live, with no model (the
// tests give their servers a Sample function).
type liveSession struct{ chat.Live }

func (liveSession) Model() llm.Provider { return nil }

func choose(v string) *chat.Answer { return &chat.Answer{Choice: v} }
func typed(s string) *chat.Answer  { return &chat.Answer{Text: s} }

func callLive(t *testing.T, tl tool.Tool, live chat.Live, args string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := tool.Call{Caller: tool.Caller{TenantID: "t", UserID: "u", Role: "owner", Language: "ru"}, Args: json.RawMessage(args)}
	if live != nil {
		call.Session = liveSession{live}
	}
	res, err := tl.Call(ctx, call)
	if err != nil {
		t.Fatalf("Call returned a Go error: %v", err)
	}
	return res
}

// TestEverythingSamplingAndElicitation enables both capabilities against
// the reference server: the conditional tools appear, every request is
// shown to the user, and allow, decline, cancel, no answer and no channel
// each reach the server as what they are.
func TestEverythingSamplingAndElicitation(t *testing.T) {
	cfg := stdioConfig(t, "everything", mcptool.Policy{Trusted: true, DefaultRisk: tool.RiskRead})
	cfg.Sampling, cfg.Elicitation = true, true
	cfg.AskTimeout = 500 * time.Millisecond
	var sampled []mcptool.SampleRequest
	var sampleMu sync.Mutex
	cfg.Sample = func(_ context.Context, req mcptool.SampleRequest) (mcptool.SampleResult, error) {
		sampleMu.Lock()
		sampled = append(sampled, req)
		sampleMu.Unlock()
		return mcptool.SampleResult{Text: "completed by the engine's model", Model: "test-model"}, nil
	}
	samples := func() []mcptool.SampleRequest {
		sampleMu.Lock()
		defer sampleMu.Unlock()
		return append([]mcptool.SampleRequest(nil), sampled...)
	}
	s := connectReal(t, cfg)
	listed := catalogNames(s)
	// The exact list for sampling and elicitation (form and URL) declared:
	// the conditional tools join; the -async ones also need tasks, which
	// we do not declare.
	want := append(slices.Clone(everythingTools), "trigger-elicitation-request", "trigger-sampling-request", "trigger-url-elicitation")
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("tools/list = %v\nwant %v", listed, want)
	}
	tools := toolsByName(s)

	t.Run("sampling allowed", func(t *testing.T) {
		live := &scriptedLive{answers: []*chat.Answer{choose("accept")}}
		res := callLive(t, tools["everything.trigger-sampling-request"], live, `{"prompt":"say hi","maxTokens":20}`)
		if res.Status != tool.StatusOK || !strings.Contains(res.Text, "completed by the engine's model") {
			t.Fatalf("sampling = %+v", res)
		}
		if len(live.asked()) != 1 || !strings.Contains(live.asked()[0].Text, "«everything»") || !strings.Contains(live.asked()[0].Text, "say hi") {
			t.Errorf("question = %+v", live.asked())
		}
		if len(samples()) != 1 || samples()[0].MaxTokens != 20 || samples()[0].Caller.UserID != "u" || !strings.Contains(samples()[0].Messages[0].Text, "say hi") {
			t.Errorf("sample request = %+v", samples())
		}
	})
	t.Run("sampling declined", func(t *testing.T) {
		live := &scriptedLive{answers: []*chat.Answer{choose("decline")}}
		res := callLive(t, tools["everything.trigger-sampling-request"], live, `{"prompt":"x"}`)
		if res.Status != tool.StatusError || len(samples()) != 1 {
			t.Errorf("declined sampling = %+v; model asked %d times", res, len(samples()))
		}
	})
	t.Run("sampling without a channel", func(t *testing.T) {
		res := callLive(t, tools["everything.trigger-sampling-request"], nil, `{"prompt":"x"}`)
		if res.Status != tool.StatusError || len(samples()) != 1 {
			t.Errorf("sampling with nobody to ask = %+v; model asked %d times", res, len(samples()))
		}
	})
	t.Run("sampling unanswered", func(t *testing.T) {
		live := &scriptedLive{answers: []*chat.Answer{nil}}
		start := time.Now()
		res := callLive(t, tools["everything.trigger-sampling-request"], live, `{"prompt":"x"}`)
		if res.Status != tool.StatusError || len(samples()) != 1 || time.Since(start) > 5*time.Second {
			t.Errorf("unanswered sampling = %+v after %s", res, time.Since(start))
		}
	})

	t.Run("progress reaches the channel", func(t *testing.T) {
		live := &scriptedLive{}
		res := callLive(t, tools["everything.trigger-long-running-operation"], live, `{"duration":0.4,"steps":2}`)
		// The SDK hands notifications over asynchronously, so the last one
		// may come after the result, when it is dropped: nothing reaches
		// the channel once the call returned.
		p := live.shownProgress()
		if res.Status != tool.StatusOK || len(p) == 0 || len(p) > 2 || p[0].Done != 1 || p[0].Total != 2 {
			t.Errorf("progress shown = %+v (%+v)", p, res)
		}
		time.Sleep(100 * time.Millisecond)
		if later := live.shownProgress(); len(later) != len(p) {
			t.Errorf("progress reached the channel after the call returned: %+v", later)
		}
	})

	t.Run("url elicitation is shown, not opened", func(t *testing.T) {
		live := &scriptedLive{answers: []*chat.Answer{choose("accept")}}
		res := callLive(t, tools["everything.trigger-url-elicitation"], live, `{"url":"https://example.com/consent","message":"Grant access"}`)
		if len(live.asked()) != 1 || !strings.Contains(live.asked()[0].Text, "https://example.com/consent") {
			t.Fatalf("question = %+v", live.asked())
		}
		if res.Status != tool.StatusOK || !strings.Contains(res.Text, "accept") {
			t.Errorf("url elicitation = %+v", res)
		}
		live = &scriptedLive{answers: []*chat.Answer{choose("decline")}}
		if res := callLive(t, tools["everything.trigger-url-elicitation"], live, `{"url":"https://example.com/x"}`); !strings.Contains(res.Text, "decline") {
			t.Errorf("declined url elicitation = %+v", res)
		}
	})

	t.Run("form declined and cancelled", func(t *testing.T) {
		for _, c := range []string{"decline", "cancel"} {
			live := &scriptedLive{answers: []*chat.Answer{choose(c)}}
			res := callLive(t, tools["everything.trigger-elicitation-request"], live, `{}`)
			if !strings.Contains(res.Text, c) || len(live.asked()) != 1 {
				t.Errorf("%s: %+v after %d questions", c, res, len(live.asked()))
			}
		}
	})

	t.Run("form filled field by field", func(t *testing.T) {
		// Fields in name order: birthdate, check, email, firstLine, homepage,
		// integer, legacyTitledEnum, name, number, titledMultipleSelectEnum,
		// titledSingleSelectEnum, untitledMultipleSelectEnum,
		// untitledSingleSelectEnum. The form is read first, then every
		// field is answered, skipped or retried.
		live := &scriptedLive{}
		form := askedFields(t, s, tools["everything.trigger-elicitation-request"])
		live.answers = append(live.answers, choose("accept"))
		for _, f := range form {
			switch {
			case f == "integer":
				live.answers = append(live.answers, typed("1000"), typed("7")) // out of range, then fine
			case f == "check":
				live.answers = append(live.answers, choose("=true"))
			case f == "name":
				live.answers = append(live.answers, typed("Дмитрий"))
			default:
				live.answers = append(live.answers, choose("skip"))
			}
		}
		res := callLive(t, tools["everything.trigger-elicitation-request"], live, `{}`)
		if res.Status != tool.StatusOK || !strings.Contains(res.Text, "accept") || !strings.Contains(res.Text, "Дмитрий") ||
			!strings.Contains(res.Text, `"integer": 7`) {
			t.Fatalf("filled form = %+v", res)
		}
		retried := false
		for _, q := range live.asked() {
			retried = retried || strings.Contains(q.Text, "Не подходит")
		}
		if !retried {
			t.Errorf("an out-of-range integer was not asked again: %+v", live.asked())
		}
	})
}

// askedFields returns the form's field names in the order they are
// asked (the schema's names, sorted), after checking on a run cancelled
// at the first field that this is the pinned server's form.
func askedFields(t *testing.T, s *mcptool.Server, tl tool.Tool) []string {
	t.Helper()
	live := &scriptedLive{answers: []*chat.Answer{choose("accept"), choose("cancel")}}
	res := callLive(t, tl, live, `{}`)
	if !strings.Contains(res.Text, "cancel") || len(live.asked()) != 2 {
		t.Fatalf("probe: %+v, %d questions", res, len(live.asked()))
	}
	names := []string{"birthdate", "check", "email", "firstLine", "homepage", "integer", "legacyTitledEnum", "name",
		"number", "titledMultipleSelectEnum", "titledSingleSelectEnum", "untitledMultipleSelectEnum", "untitledSingleSelectEnum"}
	if !strings.Contains(live.asked()[1].Text, "date") {
		t.Fatalf("first field asked = %q", live.asked()[1].Text)
	}
	return names
}
