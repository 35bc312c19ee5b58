package observe

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn"
)

// scrape reads the handler's text exposition into series -> value; a
// series is written as the exposition writes it.
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d", rec.Code)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// series names a series with its labels in the exposition's order
// (sorted by name); pairs are name, value, name, value...
func series(name string, pairs ...string) string {
	type kv struct{ k, v string }
	var kvs []kv
	for i := 0; i+1 < len(pairs); i += 2 {
		kvs = append(kvs, kv{pairs[i], pairs[i+1]})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	var b strings.Builder
	b.WriteString(name)
	if len(kvs) > 0 {
		b.WriteByte('{')
		for i, p := range kvs {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", p.k, p.v)
		}
		b.WriteByte('}')
	}
	return b.String()
}

// scriptedTurns are five turns whose counts the metrics test knows.
func scriptedTurns() []*turn.Trace {
	retried := &turn.Trace{
		TurnID: "turn-b", Tenant: "beta", UserID: "u2", ConversationID: "c2",
		Route: "model", Status: "ok", StartedAt: t0, DurationMS: 900, LockWaitMS: 20,
		LLMCalls: []store.LLMCall{
			{Provider: "fireworks", Model: "gpt-oss-20b", Operation: "decide", Attempt: "first", Status: "transient", DurationMS: 100},
			{Provider: "fireworks", Model: "gpt-oss-20b", Operation: "decide", Attempt: "retry", Status: "ok",
				InputTokens: 500, OutputTokens: 50, CostUSD: 0.001, DurationMS: 600},
		},
		Confirmation: &turn.ConfirmationTrace{ID: "p1", Tool: "delete_task", Outcome: "proposed"},
		Vetoes:       []turn.Veto{{Guard: "catalog", Tool: "x", Reason: "not_granted"}},
	}
	blocked := &turn.Trace{
		TurnID: "turn-c", Tenant: "beta", Route: "model", Status: "ok", StartedAt: t0, DurationMS: 3000,
		LLMCalls: []store.LLMCall{
			{Provider: "fireworks", Model: "gpt-oss-20b", Operation: "decide", Attempt: "skipped", Status: "transient"},
			{Provider: "anthropic", Model: "claude-haiku", Operation: "decide", Attempt: "fallback", Status: "ok",
				InputTokens: 100, CachedInputTokens: 60, OutputTokens: 10, CostUSD: 0.0008, DurationMS: 2000},
		},
	}
	duplicate := &turn.Trace{TurnID: "turn-d", Tenant: "acme", Channel: "telegram", Route: "duplicate", Status: "ok", StartedAt: t0, DurationMS: 3}
	failed := &turn.Trace{
		TurnID: "turn-e", Tenant: "acme", Route: "text", Status: "failed:load_memory", StartedAt: t0, DurationMS: 40, LockWaitMS: 2,
		Vetoes:       []turn.Veto{{Guard: "catalog", Tool: "made_up", Reason: "unknown_tool"}},
		Confirmation: &turn.ConfirmationTrace{Outcome: "no_such_outcome"},
	}
	confirmed := &turn.Trace{
		TurnID: "turn-f", Tenant: "acme", Route: "confirm", Status: "ok", StartedAt: t0, DurationMS: 60,
		Confirmation: &turn.ConfirmationTrace{ID: "p0", Tool: "create_task", Outcome: "confirmed"},
		Executed:     []turn.ExecutionTrace{{Tool: "create_task", Status: "ok", DurationMS: 50}},
		Questions: []turn.QuestionTrace{{Step: "Sampling", Choice: "accept"}, {Step: "Form", Choice: "=true"},
			{Step: "Form", Typed: true}, {Step: "Form", Choice: "decline"}, {Step: "Form", Error: "context deadline exceeded"},
			{Step: "Form", Error: chat.ErrNoLive.Error()}},
	}
	return []*turn.Trace{modelTurn(), retried, blocked, duplicate, failed, confirmed}
}

func TestMetricsCountScriptedTurns(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	h := m.Handler()
	before := scrape(t, h)
	for _, tc := range scriptedTurns() {
		m.Observe(tc)
	}
	after := scrape(t, h)

	want := map[string]float64{
		series("arbiter_turns_total", "tenant", "acme", "route", "model", "status", "ok"):                   1,
		series("arbiter_turns_total", "tenant", "beta", "route", "model", "status", "ok"):                   2,
		series("arbiter_turns_total", "tenant", "acme", "route", "duplicate", "status", "ok"):               1,
		series("arbiter_turns_total", "tenant", "acme", "route", "text", "status", "failed:load_memory"):    1,
		series("arbiter_turns_total", "tenant", "acme", "route", "confirm", "status", "ok"):                 1,
		series("arbiter_turn_duration_seconds_count", "route", "model", "status", "ok"):                     3,
		series("arbiter_turn_duration_seconds_count", "route", "duplicate", "status", "ok"):                 1,
		series("arbiter_turn_duration_seconds_count", "route", "text", "status", "failed:load_memory"):      1,
		series("arbiter_turn_duration_seconds_count", "route", "confirm", "status", "ok"):                   1,
		series("arbiter_lock_wait_seconds_count"):                                                           6,
		series("arbiter_inbox_duplicates_total", "channel", "telegram"):                                     1,
		llmCalls("fireworks", "gpt-oss-20b", "rate_limited", "first"):                                       1,
		llmCalls("anthropic", "claude-haiku", "ok", "fallback"):                                             2,
		llmCalls("fireworks", "gpt-oss-20b", "transient", "first"):                                          1,
		llmCalls("fireworks", "gpt-oss-20b", "ok", "retry"):                                                 1,
		llmCalls("fireworks", "gpt-oss-20b", "transient", "skipped"):                                        1,
		series("arbiter_llm_call_duration_seconds_count", "provider", "fireworks", "model", "gpt-oss-20b"):  3,
		series("arbiter_llm_call_duration_seconds_count", "provider", "anthropic", "model", "claude-haiku"): 2,
		series("arbiter_llm_retries_total", "provider", "fireworks", "model", "gpt-oss-20b"):                1,
		series("arbiter_llm_fallbacks_total", "provider", "anthropic", "model", "claude-haiku"):             2,
		series("arbiter_llm_blocked_total", "provider", "fireworks", "model", "gpt-oss-20b"):                1,
		tokens("acme", "claude-haiku", "input"):                                                             1200,
		tokens("acme", "claude-haiku", "cached_input"):                                                      800,
		tokens("acme", "claude-haiku", "output"):                                                            90,
		tokens("beta", "gpt-oss-20b", "input"):                                                              500,
		tokens("beta", "gpt-oss-20b", "output"):                                                             50,
		tokens("beta", "claude-haiku", "input"):                                                             100,
		tokens("beta", "claude-haiku", "cached_input"):                                                      60,
		tokens("beta", "claude-haiku", "output"):                                                            10,
		series("arbiter_llm_cost_usd_total", "tenant", "acme", "model", "claude-haiku"):                     0.0042,
		series("arbiter_llm_cost_usd_total", "tenant", "beta", "model", "gpt-oss-20b"):                      0.001,
		series("arbiter_llm_cost_usd_total", "tenant", "beta", "model", "claude-haiku"):                     0.0008,
		series("arbiter_tool_executions_total", "tool", "create_task", "status", "error"):                   1,
		series("arbiter_tool_executions_total", "tool", "create_task", "status", "ok"):                      1,
		series("arbiter_tool_duration_seconds_count", "tool", "create_task"):                                2,
		series("arbiter_vetoes_total", "guard", "catalog", "reason", "not_granted"):                         1,
		series("arbiter_vetoes_total", "guard", "catalog", "reason", "unknown_tool"):                        1,
		series("arbiter_confirmations_total", "outcome", "proposed"):                                        1,
		series("arbiter_confirmations_total", "outcome", "confirmed"):                                       1,
		series("arbiter_confirmations_total", "outcome", "other"):                                           1,
		series("arbiter_questions_total", "answer", "accept"):                                               1,
		series("arbiter_questions_total", "answer", "answered"):                                             2,
		series("arbiter_questions_total", "answer", "decline"):                                              1,
		series("arbiter_questions_total", "answer", "unanswered"):                                           1,
		series("arbiter_questions_total", "answer", "no_channel"):                                           1,
	}
	moved := map[string]float64{}
	for k, v := range after {
		if strings.HasPrefix(k, "arbiter_") && v != before[k] {
			moved[k] = v - before[k]
		}
	}
	for k, v := range want {
		if math.Abs(moved[k]-v) > 1e-9 {
			t.Errorf("%s moved by %v, want %v", k, moved[k], v)
		}
	}
	for k, v := range moved {
		name := k
		if i := strings.IndexByte(k, '{'); i >= 0 {
			name = k[:i]
		}
		if _, ok := want[k]; !ok && !strings.HasSuffix(name, "_bucket") && !strings.HasSuffix(name, "_sum") {
			t.Errorf("unexpected series %s moved by %v", k, v)
		}
	}

	// Histogram sums and buckets.
	for k, v := range map[string]float64{
		series("arbiter_turn_duration_seconds_sum", "route", "model", "status", "ok"): 1.5 + 0.9 + 3,
		series("arbiter_lock_wait_seconds_sum"):                                       0.004 + 0.020 + 0.002,
		`arbiter_turn_duration_seconds_bucket{route="model",status="ok",le="1"}`:      1,
		`arbiter_turn_duration_seconds_bucket{route="model",status="ok",le="2.5"}`:    2,
		`arbiter_turn_duration_seconds_bucket{route="model",status="ok",le="5"}`:      3,
		`arbiter_lock_wait_seconds_bucket{le="0.001"}`:                                3,
		`arbiter_lock_wait_seconds_bucket{le="0.005"}`:                                5,
		`arbiter_lock_wait_seconds_bucket{le="0.05"}`:                                 6,
	} {
		if math.Abs(moved[k]-v) > 1e-9 {
			t.Errorf("%s moved by %v, want %v", k, moved[k], v)
		}
	}

	// Every outcome has a series from the start.
	for _, o := range turn.Outcomes {
		if _, ok := before[series("arbiter_confirmations_total", "outcome", string(o))]; !ok {
			t.Errorf("no initial series for confirmation outcome %s", o)
		}
	}
}

func llmCalls(provider, model, status, attempt string) string {
	return series("arbiter_llm_calls_total", "provider", provider, "model", model, "status", status, "attempt", attempt)
}

func tokens(tenant, model, typ string) string {
	return series("arbiter_llm_tokens_total", "tenant", tenant, "model", model, "type", typ)
}

// allowedLabels are the only label names the metrics use.
var allowedLabels = map[string]bool{
	"tenant": true, "route": true, "status": true, "provider": true, "model": true, "attempt": true, "type": true,
	"tool": true, "guard": true, "reason": true, "outcome": true, "answer": true, "channel": true, "le": true,
}

func TestMetricsCardinalityBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	const n = 3000
	for i := range n {
		id := strconv.Itoa(i)
		tc := &turn.Trace{
			TurnID: "turn-" + id, UserID: "user-" + id, ConversationID: "chat-" + id, MessageID: "msg-" + id,
			Tenant: "tenant-" + id, Route: turn.RouteCommand("c" + id), Status: turn.Status("failed:s" + id), Channel: "ch-" + id,
			DurationMS: int64(i), LockWaitMS: int64(i % 7),
			LLMCalls: []store.LLMCall{{Provider: "p" + id, Model: "model-" + id, Attempt: "attempt-" + id, Status: "kind-" + id,
				InputTokens: 1, OutputTokens: 1, CostUSD: 0.01}},
			Executed:     []turn.ExecutionTrace{{Tool: "tool-" + id, Status: "st-" + id}},
			Vetoes:       []turn.Veto{{Guard: "g" + id, Tool: "t" + id, Reason: "r" + id}},
			Confirmation: &turn.ConfirmationTrace{ID: id, Outcome: turn.Outcome("o" + id)},
		}
		if i%2 == 0 {
			tc.Route = "duplicate"
		}
		m.Observe(tc)
	}
	got := scrape(t, m.Handler())

	limits := map[string]int{
		"tenant": maxTenants, "route": maxRoutes, "status": maxStatuses, "provider": maxProviders, "model": maxModels,
		"attempt": 4, "tool": maxTools, "guard": maxGuards, "reason": maxReasons, "outcome": len(turn.Outcomes),
		"channel": maxChannels, "type": 3, "answer": len(questionOutcomes),
	}
	values := map[string]map[string]bool{}
	for k := range got {
		if !strings.HasPrefix(k, "arbiter_") {
			continue
		}
		i := strings.IndexByte(k, '{')
		if i < 0 {
			continue
		}
		for _, pair := range splitLabels(k[i+1 : len(k)-1]) {
			name, value, _ := strings.Cut(pair, "=")
			if !allowedLabels[name] {
				t.Fatalf("label %s in %s", name, k)
			}
			if values[name] == nil {
				values[name] = map[string]bool{}
			}
			values[name][value] = true
		}
		for _, id := range []string{"turn-", "user-", "chat-", "msg-"} {
			if strings.Contains(k, id) {
				t.Fatalf("series %s carries an id", k)
			}
		}
	}
	for name, limit := range limits {
		// Status is shared by turn, model-call and tool statuses, each
		// limited on its own.
		if name == "status" {
			limit *= 3
		}
		if got := len(values[name]); got > limit+2 { // + "other", "unknown"
			t.Errorf("label %s has %d values, limit %d", name, got, limit)
		}
		if name != "type" && name != "answer" && !values[name][`"other"`] {
			t.Errorf("label %s never fell back to other", name)
		}
	}
	if len(got) > 20000 {
		t.Errorf("%d series after %d distinct turns", len(got), n)
	}
}

// splitLabels splits `a="x",b="y"` into pairs; values here hold no commas.
func splitLabels(s string) []string {
	return strings.Split(s, ",")
}

func TestMetricsSharedRegistryAndDefaults(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := NewMetrics(reg), NewMetrics(reg)
	a.Observe(&turn.Trace{Tenant: "acme", Route: "text", Status: "ok"})
	b.Observe(&turn.Trace{Tenant: "acme", Route: "text", Status: "ok"})
	if got := scrape(t, a.Handler())[series("arbiter_turns_total", "tenant", "acme", "route", "text", "status", "ok")]; got != 2 {
		t.Errorf("two Metrics on one registry counted %v turns, want 2", got)
	}

	own := NewMetrics(nil)
	own.Observe(&turn.Trace{Tenant: "acme", Route: "text", Status: "ok", LLMCalls: []store.LLMCall{{Provider: "p", Model: "m", Status: "ok"}}})
	got := scrape(t, own.Handler())
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("own registry lacks the Go collector")
	}
	if got[llmCalls("p", "m", "ok", "first")] != 1 {
		t.Error("an empty attempt is not counted as first")
	}

	var none *Metrics
	none.Observe(modelTurn())
	scrape(t, none.Handler())
}

// TestMetricsDocumented checks every metric has help text and appears in
// the Metrics documentation.
func TestMetricsDocumented(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for _, tc := range scriptedTurns() {
		m.Observe(tc)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	if i := strings.Index(doc, "type Metrics struct"); i > 0 {
		doc = doc[:i]
	}
	if len(families) != 16 {
		t.Errorf("%d metric families, want 16", len(families))
	}
	for _, f := range families {
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", f.GetName())
		}
		if !strings.Contains(doc, "//\t"+f.GetName()) {
			t.Errorf("%s is not in the Metrics documentation", f.GetName())
		}
	}
}
