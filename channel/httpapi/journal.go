package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/arbiterhq/arbiter/store"
)

// JournalTurn reads a turn's record (Config.Turn) from a journal.
func JournalTurn(j store.Journal) func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	return func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
		rec, err := j.GetTurn(ctx, tenant, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrTurnNotFound
		}
		if err != nil {
			return nil, err
		}
		return withToolCalls(rec), nil
	}
}

// withToolCalls adds the journal's tool call rows — the audit columns:
// server, remote tool, argument hash, risk, scope, confirmation — to the
// turn's trace as "tool_calls".
func withToolCalls(rec store.TurnRecord) json.RawMessage {
	trace := bytes.TrimSpace(rec.Trace)
	if len(rec.ToolCalls) == 0 || len(trace) < 2 || trace[len(trace)-1] != '}' {
		return rec.Trace
	}
	calls, err := json.Marshal(rec.ToolCalls)
	if err != nil {
		return rec.Trace
	}
	out := make([]byte, 0, len(trace)+len(calls)+16)
	out = append(out, trace[:len(trace)-1]...)
	if len(bytes.TrimSpace(trace[1:len(trace)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"tool_calls":`...)
	out = append(out, calls...)
	return append(out, '}')
}

// JournalTurns lists turns (Config.Turns) from a journal that can list
// them (store.TurnLister); nil for one that cannot.
func JournalTurns(j store.Journal) func(ctx context.Context, tenant string, q TurnQuery) ([]TurnSummary, error) {
	lister, ok := j.(store.TurnLister)
	if !ok {
		return nil
	}
	return func(ctx context.Context, tenant string, q TurnQuery) ([]TurnSummary, error) {
		recs, err := lister.ListTurns(ctx, tenant, store.TurnFilter{
			Chat: q.ConversationID, UserID: q.UserID, Status: q.Status, Provider: q.Provider, Before: q.Before, Limit: q.Limit,
		})
		if err != nil {
			return nil, err
		}
		out := make([]TurnSummary, len(recs))
		for i, r := range recs {
			sum := TurnSummary{TurnID: r.TurnID, ConversationID: r.Chat, UserID: r.UserID, Route: r.Route,
				Status: r.Status, StartedAt: r.StartedAt, DurationMS: r.DurationMS, CostUnknown: r.CostUnknown, Providers: []string{}}
			seen := map[string]bool{}
			for _, c := range r.LLMCalls {
				sum.CostUSD += c.CostUSD
				sum.CostUnknown = sum.CostUnknown || c.CostUnknown
				if c.Provider != "" && !seen[c.Provider] {
					seen[c.Provider] = true
					sum.Providers = append(sum.Providers, c.Provider)
				}
			}
			out[i] = sum
		}
		return out, nil
	}
}
