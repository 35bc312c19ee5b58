package server

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/store"
)

// Retention defaults: the journal keeps a quarter of turns, the execution
// records of writes (the idempotency ledger) more than a year.
const (
	DefaultTurnRetention      = 90 * 24 * time.Hour
	DefaultExecutionRetention = 400 * 24 * time.Hour
	DefaultPruneEvery         = 10 * time.Minute
)

// ExecutionRetention is how long configuration r keeps a finished write's
// execution record: retention.executions, its default, or with keep a
// century — for a store that expires records by itself (Redis) rather
// than by Prune.
func ExecutionRetention(r config.Retention) time.Duration {
	switch {
	case r.Keep:
		return 100 * 365 * 24 * time.Hour
	case r.Executions > 0:
		return time.Duration(r.Executions)
	}
	return DefaultExecutionRetention
}

// pruners are the stores that keep records past their retention: the
// state store and, when it is another one, the journal.
func (s *Server) pruners() []store.Pruner {
	var out []store.Pruner
	if p, ok := s.State.(store.Pruner); ok {
		out = append(out, p)
	}
	if p, ok := s.Journal.(store.Pruner); ok && any(s.Journal) != any(s.State) {
		out = append(out, p)
	}
	return out
}

// retention is the configuration's, defaults applied; ok is false when
// records are kept forever.
func (s *Server) retention() (r store.Retention, every time.Duration, ok bool) {
	c := s.Config.Retention
	if c.Keep {
		return r, 0, false
	}
	r = store.Retention{Turns: time.Duration(c.Turns), Executions: time.Duration(c.Executions)}
	if r.Turns == 0 {
		r.Turns = DefaultTurnRetention
	}
	if r.Executions == 0 {
		r.Executions = DefaultExecutionRetention
	}
	every = time.Duration(c.Every)
	if every == 0 {
		every = DefaultPruneEvery
	}
	return r, every, true
}

// prune deletes, at start and then every retention.every, what is past
// retention, in batches that each hold the store for a few milliseconds.
func (s *Server) prune(ctx context.Context) error {
	r, every, _ := s.retention()
	now := s.env.Now
	if now == nil {
		now = time.Now
	}
	for {
		for _, p := range s.pruners() {
			got, err := p.Prune(ctx, now(), r)
			switch {
			case err != nil && ctx.Err() == nil:
				s.env.Logger.Warn("retention", "err", err, "turns", got.Turns, "executions", got.Executions)
			case got != (store.Pruned{}):
				s.env.Logger.Info("retention", "turns", got.Turns, "executions", got.Executions)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}
