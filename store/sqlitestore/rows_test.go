package sqlitestore

import (
	"math"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// The calls' text survives the JSON the rows travel in: quotes,
// backslashes, control characters and any language; bytes that are not
// UTF-8 come back as U+FFFD; a cost that is not a number is stored as 0.
func TestCallRowsKeepTheirText(t *testing.T) {
	s := openTest(t, Options{})
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	tricky := "say \"hi\" \\ path\n\ttab \x01 привет 🙂"
	rec := store.TurnRecord{TurnID: "turn-1", Tenant: "t", Chat: "c", UserID: "u", Route: "model", Status: "ok", StartedAt: at,
		LLMCalls: []store.LLMCall{{Provider: "p", Model: tricky, Error: "bad \xff byte", CostUSD: math.NaN(), InputTokens: 1 << 40, At: at}},
		ToolCalls: []store.ToolCall{{Tool: "t", Error: tricky, ArgsHash: "", DurationMS: -5, At: at},
			{Tool: "second", Status: "ok"}}}
	if err := s.AppendTurn(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTurn(t.Context(), "t", "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.LLMCalls) != 1 || len(got.ToolCalls) != 2 {
		t.Fatalf("calls = %+v / %+v", got.LLMCalls, got.ToolCalls)
	}
	l := got.LLMCalls[0]
	if l.Model != tricky || l.Error != "bad \uFFFD byte" || l.CostUSD != 0 || l.InputTokens != 1<<40 || !l.At.Equal(at) {
		t.Errorf("llm call = %+v", l)
	}
	if c := got.ToolCalls[0]; c.Error != tricky || c.DurationMS != -5 || !c.At.Equal(at) {
		t.Errorf("tool call = %+v", c)
	}
	if c := got.ToolCalls[1]; c.Tool != "second" || !c.At.IsZero() {
		t.Errorf("second tool call = %+v", c)
	}
}
