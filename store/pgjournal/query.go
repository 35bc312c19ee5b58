package pgjournal

import (
	"context"
	"fmt"
	"time"
)

// DayCost is the model spend of one tenant on one UTC day.
type DayCost struct {
	Day     time.Time // midnight UTC starting the day
	CostUSD float64   // sum of the calls' CostUSD
	Calls   int64     // model calls (attempts) made that day, failed ones included
}

// CostPerDay returns the model spend of tenant per UTC day, over the calls
// that started in [from, to), oldest day first; days without calls are
// left out. It reads the index llm_calls_cost alone. Safe for concurrent
// use.
func (j *Journal) CostPerDay(ctx context.Context, tenant string, from, to time.Time) ([]DayCost, error) {
	what := func() string { return fmt.Sprintf("cost per day of tenant %s from %s to %s", tenant, from, to) }
	if j.closed.Load() {
		return nil, j.fail(what(), errClosed)
	}
	rows, err := j.pool.Query(ctx, j.q.costPerDay, clean(tenant), from, to)
	if err != nil {
		return nil, j.fail(what(), err)
	}
	defer rows.Close()
	var days []DayCost
	for rows.Next() {
		var d DayCost
		if err := rows.Scan(&d.Day, &d.CostUSD, &d.Calls); err != nil {
			return nil, j.fail(what(), err)
		}
		d.Day = d.Day.UTC()
		days = append(days, d)
	}
	if err := rows.Err(); err != nil {
		return nil, j.fail(what(), err)
	}
	return days, nil
}

// TurnSummary is a turn as TurnsOfConversation lists it: the indexed
// columns, without calls or trace (GetTurn has those).
type TurnSummary struct {
	TurnID     string
	Route      string
	Status     string
	StartedAt  time.Time
	DurationMS int64
}

// TurnsOfConversation returns the newest limit turns of the conversation
// (tenant, chat, user), newest first, read along the index
// turns_by_conversation. limit must be positive. Safe for concurrent use.
func (j *Journal) TurnsOfConversation(ctx context.Context, tenant, chat, user string, limit int) ([]TurnSummary, error) {
	what := func() string { return fmt.Sprintf("turns of conversation %s/%s/%s", tenant, chat, user) }
	if limit <= 0 {
		return nil, fmt.Errorf("pgjournal: %s: limit %d is not positive", what(), limit)
	}
	if j.closed.Load() {
		return nil, j.fail(what(), errClosed)
	}
	rows, err := j.pool.Query(ctx, j.q.conversationTurns, clean(tenant), clean(chat), clean(user), limit)
	if err != nil {
		return nil, j.fail(what(), err)
	}
	defer rows.Close()
	var turns []TurnSummary
	for rows.Next() {
		var t TurnSummary
		if err := rows.Scan(&t.TurnID, &t.Route, &t.Status, &t.StartedAt, &t.DurationMS); err != nil {
			return nil, j.fail(what(), err)
		}
		t.StartedAt = t.StartedAt.UTC()
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, j.fail(what(), err)
	}
	return turns, nil
}
