package observe

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// Strings that must never reach a span unless content capture is on.
const (
	secretSay      = "Готово: задача «купить молоко» создана"
	secretDecision = `{"say":"Готово","tool":"create_task","args":{"title":"купить молоко"}}`
	secretUser     = "user-4242"
	secretChat     = "chat-777"
	secretMessage  = "msg-99"
	secretError    = "load memory acme/chat-777/user-4242: boom"
	secretToolErr  = "board card «купить молоко» is locked"
	secretLLMError = "HTTP 429: slow down"
)

// modelTurn is a turn decided by a fallback model after a rate-limited
// first call, which then ran one tool.
func modelTurn() *turn.Trace {
	return &turn.Trace{
		TurnID: "turn-1", ConversationID: secretChat, Tenant: "acme", UserID: secretUser,
		Channel: "telegram", MessageID: secretMessage,
		Route: "model", Status: "ok", StartedAt: t0, DurationMS: 1500, LockWaitMS: 4,
		Steps: []turn.StepTrace{
			{Name: "lock", At: at(0), DurationMS: 4},
			{Name: "dedupe", At: at(4), DurationMS: 1},
			{Name: "load_memory", At: at(5), DurationMS: 3},
			{Name: "assemble", At: at(8), DurationMS: 2},
			{Name: "decide:decide", At: at(10), DurationMS: 1100},
			{Name: "execute:create_task", At: at(1120), DurationMS: 200, Note: "ok"},
		},
		LLMCalls: []store.LLMCall{
			{Provider: "fireworks", Model: "gpt-oss-20b", Operation: "decide", Strategy: "balanced", Attempt: "first",
				DurationMS: 300, Status: "rate_limited", Error: secretLLMError, At: at(10)},
			{Provider: "anthropic", Model: "claude-haiku", Operation: "decide", Strategy: "balanced", Attempt: "fallback",
				InputTokens: 1200, CachedInputTokens: 800, OutputTokens: 90, CostUSD: 0.0042,
				DurationMS: 700, Status: "ok", Note: "blocked provider fireworks for 5m0s", At: at(400)},
		},
		DecidedBy: &turn.DecidedBy{Provider: "anthropic", Model: "claude-haiku"},
		CostUSD:   0.0042,
		Decision:  json.RawMessage(secretDecision),
		Vetoes:    []turn.Veto{},
		Executed: []turn.ExecutionTrace{
			{Tool: "create_task", Args: json.RawMessage(`{"title":"купить молоко"}`), Status: "error", DurationMS: 200,
				Result: &tool.Result{Status: tool.StatusError, Error: secretToolErr}},
		},
		Say: secretSay,
	}
}

// record runs obs over a fresh in-memory exporter and returns the spans.
func record(t *testing.T, cfg Config, traces ...*turn.Trace) tracetest.SpanStubs {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.TracerProvider = tp
	tr, shutdown, err := NewTracing(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range traces {
		tr.Observe(tc)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func byName(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(found), name, names(spans))
	}
	return found[0]
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// checkSpan compares the status and the attributes of the span s, named
// what in the errors, with the wanted ones.
func checkSpan(t *testing.T, what string, s tracetest.SpanStub, code codes.Code, desc string, attrs map[string]any) {
	t.Helper()
	if s.Status.Code != code || s.Status.Description != desc {
		t.Errorf("%s status %+v, want %v %q", what, s.Status, code, desc)
	}
	if got := attrMap(s.Attributes); !reflect.DeepEqual(got, attrs) {
		t.Errorf("%s attributes\n got %v\nwant %v", what, got, attrs)
	}
}

func TestTurnSpans(t *testing.T) {
	tc := modelTurn()
	before, _ := json.Marshal(tc)
	spans := record(t, Config{}, tc)
	after, _ := json.Marshal(tc)
	if string(before) != string(after) {
		t.Error("Observe modified the trace")
	}

	wantNames := []string{
		"arbiter.turn", "arbiter.lock", "arbiter.dedupe", "arbiter.load_memory", "arbiter.assemble",
		"arbiter.decide:decide", "chat gpt-oss-20b", "chat claude-haiku", "execute_tool create_task",
	}
	got := names(spans)
	if len(got) != len(wantNames) {
		t.Fatalf("spans %v, want %v", got, wantNames)
	}
	for _, n := range wantNames {
		byName(t, spans, n)
	}

	root := byName(t, spans, "arbiter.turn")
	decide := byName(t, spans, "arbiter.decide:decide")
	parent := map[string]trace.SpanID{
		"arbiter.lock": root.SpanContext.SpanID(), "arbiter.dedupe": root.SpanContext.SpanID(),
		"arbiter.load_memory": root.SpanContext.SpanID(), "arbiter.assemble": root.SpanContext.SpanID(),
		"arbiter.decide:decide": root.SpanContext.SpanID(), "execute_tool create_task": root.SpanContext.SpanID(),
		"chat gpt-oss-20b": decide.SpanContext.SpanID(), "chat claude-haiku": decide.SpanContext.SpanID(),
	}
	if root.Parent.IsValid() {
		t.Errorf("turn span has a parent %v", root.Parent)
	}
	if !root.StartTime.Equal(t0) || !root.EndTime.Equal(at(1500)) {
		t.Errorf("turn span %v..%v, want %v..%v", root.StartTime, root.EndTime, t0, at(1500))
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s in another trace", s.Name)
		}
		if s.Name == "arbiter.turn" {
			continue
		}
		if s.Parent.SpanID() != parent[s.Name] {
			t.Errorf("%s: parent %s, want %s", s.Name, byID[s.Parent.SpanID()].Name, byID[parent[s.Name]].Name)
		}
		p := byID[s.Parent.SpanID()]
		if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) || s.EndTime.Before(s.StartTime) {
			t.Errorf("%s %v..%v outside its parent %s %v..%v", s.Name, s.StartTime, s.EndTime, p.Name, p.StartTime, p.EndTime)
		}
	}

	// Timestamps are the trace's own.
	for name, want := range map[string][2]time.Time{
		"arbiter.lock":             {at(0), at(4)},
		"arbiter.decide:decide":    {at(10), at(1110)},
		"chat gpt-oss-20b":         {at(10), at(310)},
		"chat claude-haiku":        {at(400), at(1100)},
		"execute_tool create_task": {at(1120), at(1320)},
	} {
		s := byName(t, spans, name)
		if !s.StartTime.Equal(want[0]) || !s.EndTime.Equal(want[1]) {
			t.Errorf("%s: %v..%v, want %v..%v", name, s.StartTime, s.EndTime, want[0], want[1])
		}
	}

	checkSpan(t, "turn", root, codes.Unset, "", map[string]any{
		"arbiter.turn.id": "turn-1", "arbiter.tenant": "acme", "arbiter.route": "model", "arbiter.status": "ok",
		"arbiter.channel": "telegram", "gen_ai.conversation.id": (&Tracing{}).conversationID("acme", secretChat),
		"arbiter.lock_wait_ms": int64(4), "arbiter.llm_calls": int64(2), "arbiter.cost_usd": 0.0042,
		"arbiter.decided_by.provider": "anthropic", "arbiter.decided_by.model": "claude-haiku",
	})

	failed := byName(t, spans, "chat gpt-oss-20b")
	checkSpan(t, "failed call", failed, codes.Error, "rate_limited", map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "fireworks", "gen_ai.system": "fireworks",
		"gen_ai.request.model": "gpt-oss-20b", "arbiter.attempt": "first", "arbiter.cost_usd": 0.0,
		"arbiter.operation": "decide", "arbiter.strategy": "balanced", "error.type": "rate_limited",
	})
	if failed.SpanKind != trace.SpanKindClient {
		t.Errorf("call span kind %v", failed.SpanKind)
	}

	checkSpan(t, "ok call", byName(t, spans, "chat claude-haiku"), codes.Unset, "", map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.system": "anthropic",
		"gen_ai.request.model": "claude-haiku", "gen_ai.response.model": "claude-haiku",
		"gen_ai.usage.input_tokens": int64(1200), "gen_ai.usage.output_tokens": int64(90),
		"gen_ai.usage.cache_read.input_tokens": int64(800),
		"arbiter.attempt":                      "fallback", "arbiter.cost_usd": 0.0042, "arbiter.operation": "decide",
		"arbiter.strategy": "balanced", "arbiter.note": "blocked provider fireworks for 5m0s",
	})

	checkSpan(t, "tool", byName(t, spans, "execute_tool create_task"), codes.Error, "error", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_task",
		"arbiter.tool.status": "error", "error.type": "error",
	})

	assertNoContent(t, spans)
}

// assertNoContent fails if any span, attribute, event or status carries
// user content or ids.
func assertNoContent(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	raw := spanTexts(spans)
	for _, secret := range []string{secretSay, secretDecision, "купить молоко", secretUser, secretChat, secretMessage,
		secretError, secretToolErr, secretLLMError, "invented_tool"} {
		if strings.Contains(raw, secret) {
			t.Errorf("spans contain %q", secret)
		}
	}
	for _, s := range spans {
		for _, e := range s.Events {
			if e.Name == EventDecision || e.Name == EventReply {
				t.Errorf("span %s has content event %s", s.Name, e.Name)
			}
		}
	}
}

// spanTexts joins every name, attribute, event and status text of spans.
func spanTexts(spans tracetest.SpanStubs) string {
	var texts []string
	for _, s := range spans {
		texts = append(texts, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.Emit())
			}
		}
	}
	return strings.Join(texts, "\n")
}

func TestCaptureContent(t *testing.T) {
	tc := modelTurn()
	tc.Vetoes = []turn.Veto{{Guard: "catalog", Tool: "invented_tool", Reason: "unknown_tool"}}
	spans := record(t, Config{CaptureContent: true, PlainConversationID: true}, tc)
	root := byName(t, spans, "arbiter.turn")
	events := map[string]sdktrace.Event{}
	for _, e := range root.Events {
		events[e.Name] = e
	}
	if got := attrMap(events[EventDecision].Attributes)["arbiter.decision"]; got != secretDecision {
		t.Errorf("decision event %v, want %s", got, secretDecision)
	}
	if got := attrMap(events[EventReply].Attributes)["arbiter.say"]; got != secretSay {
		t.Errorf("reply event %v, want %s", got, secretSay)
	}
	if got := attrMap(events[EventVeto].Attributes)["arbiter.veto.tool"]; got != "invented_tool" {
		t.Errorf("veto tool %v", got)
	}
	for _, e := range root.Events {
		if e.Time.Before(root.StartTime) || e.Time.After(root.EndTime) {
			t.Errorf("event %s at %v outside the turn", e.Name, e.Time)
		}
	}
	if got := attrMap(root.Attributes)["gen_ai.conversation.id"]; got != secretChat {
		t.Errorf("plain conversation id %v", got)
	}
	if got := byName(t, spans, "chat gpt-oss-20b").Status.Description; got != "rate_limited: "+secretLLMError {
		t.Errorf("failed call description %q", got)
	}
	if got := byName(t, spans, "execute_tool create_task").Status.Description; got != "error: "+secretToolErr {
		t.Errorf("tool description %q", got)
	}
	// User and message ids stay out even with content capture.
	raw := spanTexts(spans)
	for _, id := range []string{secretUser, secretMessage} {
		if strings.Contains(raw, id) {
			t.Errorf("spans contain %q", id)
		}
	}
}

func TestFailedTurnAndVetoes(t *testing.T) {
	tc := &turn.Trace{
		TurnID: "turn-2", ConversationID: secretChat, Tenant: "acme", UserID: secretUser,
		Route: "text", Status: "failed:load_memory", Error: secretError, StartedAt: t0, DurationMS: 30,
		Steps: []turn.StepTrace{{Name: "lock", At: at(0), DurationMS: 2}},
		Vetoes: []turn.Veto{
			{Guard: "catalog", Tool: "invented_tool", Reason: "unknown_tool"},
			{Guard: "catalog", Tool: "delete_board", Reason: "not_granted"},
		},
	}
	spans := record(t, Config{}, tc)
	root := byName(t, spans, "arbiter.turn")
	if root.Status.Code != codes.Error || root.Status.Description != "failed:load_memory" {
		t.Errorf("turn status %+v", root.Status)
	}
	if got := attrMap(root.Attributes)["error.type"]; got != "failed:load_memory" {
		t.Errorf("error.type %v", got)
	}
	var vetoes []map[string]any
	for _, e := range root.Events {
		if e.Name == EventVeto {
			vetoes = append(vetoes, attrMap(e.Attributes))
		}
	}
	want := []map[string]any{
		{"arbiter.veto.guard": "catalog", "arbiter.veto.reason": "unknown_tool"},
		{"arbiter.veto.guard": "catalog", "arbiter.veto.reason": "not_granted", "arbiter.veto.tool": "delete_board"},
	}
	if !reflect.DeepEqual(vetoes, want) {
		t.Errorf("veto events %v, want %v", vetoes, want)
	}
	assertNoContent(t, spans)
}

// Model calls timed by another clock than the engine's are laid out one
// after another inside their decide step.
func TestCallsOnAnotherClock(t *testing.T) {
	tc := modelTurn()
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tc.LLMCalls[0].At = wall
	tc.LLMCalls[1].At = time.Time{}
	tc.LLMCalls = append(tc.LLMCalls, store.LLMCall{Provider: "anthropic", Model: "claude-haiku", Operation: "repair",
		Attempt: "first", Status: "ok", DurationMS: 50, At: wall})
	spans := record(t, Config{}, tc)
	root := byName(t, spans, "arbiter.turn")
	decide := byName(t, spans, "arbiter.decide:decide")
	var calls []tracetest.SpanStub
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") {
			calls = append(calls, s)
		}
	}
	if len(calls) != 3 {
		t.Fatalf("calls %v", names(spans))
	}
	if c := calls[0]; c.Parent.SpanID() != decide.SpanContext.SpanID() || !c.StartTime.Equal(at(10)) || !c.EndTime.Equal(at(310)) {
		t.Errorf("first call %v..%v", c.StartTime, c.EndTime)
	}
	if c := calls[1]; c.Parent.SpanID() != decide.SpanContext.SpanID() || !c.StartTime.Equal(at(310)) || !c.EndTime.Equal(at(1010)) {
		t.Errorf("second call %v..%v", c.StartTime, c.EndTime)
	}
	// No decide:repair step: the repair call hangs off the turn.
	if c := calls[2]; c.Parent.SpanID() != root.SpanContext.SpanID() || c.StartTime.Before(root.StartTime) || c.EndTime.After(root.EndTime) {
		t.Errorf("repair call parent %v %v..%v", c.Parent.SpanID(), c.StartTime, c.EndTime)
	}
}

func TestDisabledTracing(t *testing.T) {
	var nilTracing *Tracing
	nilTracing.Observe(modelTurn())
	if nilTracing.Enabled() || nilTracing.TracerProvider() != nil {
		t.Error("nil Tracing enabled")
	}
	tr, shutdown, err := NewTracing(context.Background(), Config{Exporter: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Error("exporter none is enabled")
	}
	tr.Observe(modelTurn())
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSampledOut(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.NeverSample()))
	tr, _, err := NewTracing(context.Background(), Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	tr.Observe(modelTurn())
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans recorded with a never sampler", n)
	}
}

func TestTracingConcurrent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr, _, err := NewTracing(context.Background(), Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	obs := Observer(m.Observe, tr.Observe)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				obs(modelTurn())
			}
		})
	}
	wg.Wait()
	if n := len(exp.GetSpans()); n != 8*20*9 {
		t.Errorf("%d spans, want %d", n, 8*20*9)
	}
}

func TestObserver(t *testing.T) {
	var got []string
	a := func(tc *turn.Trace) { got = append(got, "a:"+tc.TurnID) }
	b := func(tc *turn.Trace) { got = append(got, "b:"+tc.TurnID) }
	Observer(a, nil, b)(&turn.Trace{TurnID: "1"})
	Observer(nil)(&turn.Trace{TurnID: "2"})
	Observer()(&turn.Trace{TurnID: "3"})
	Observer(b)(&turn.Trace{TurnID: "4"})
	want := []string{"a:1", "b:1", "b:4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}
