package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/pgjournal"
	"github.com/arbiterhq/arbiter/store/redisstore"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
)

// backends are the stores a wired arbiter uses.
type backends struct {
	state   store.State
	locker  store.Locker
	journal store.Journal
	// sqlite is the embedded file: the state itself (kind sqlite), the task
	// board's tables, and the journal unless another is configured.
	sqlite  *sqlitestore.Store
	closers []func() error
}

func (b *backends) close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	return errors.Join(errs...)
}

// openBackends is the kind -> constructor switch for stores and journals.
func openBackends(cfg *config.Config, opts Options) (*backends, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := &backends{}
	fail := func(err error) (*backends, error) {
		b.close()
		return nil, err
	}
	path := cfg.Store.Path
	if cfg.Store.Kind == "redis" {
		// With the state in Redis, the embedded file keeps only the board
		// and the default journal.
		path = cfg.Journal.Path
		if path == "" {
			path = filepath.Join("data", "journal.db")
		}
	} else if path == "" {
		path = filepath.Join("data", "arbiter.db")
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{
		ConversationTTL: time.Duration(cfg.Memory.TTL), Now: opts.Now,
		LockWait: time.Duration(cfg.Store.LockWait), LockTTL: time.Duration(cfg.Store.LockTTL),
	})
	if err != nil {
		return fail(fmt.Errorf("open store %s: %w", path, err))
	}
	b.sqlite, b.state, b.locker, b.journal = st, st, st, st
	b.closers = append(b.closers, st.Close)

	if cfg.Store.Kind == "redis" {
		rs, err := redisstore.Open(ctx, redisstore.Options{
			URL: cfg.Store.URL, Prefix: cfg.Store.Prefix, Now: opts.Now,
			ConversationTTL: time.Duration(cfg.Memory.TTL),
			LockWait:        time.Duration(cfg.Store.LockWait), LockTTL: time.Duration(cfg.Store.LockTTL),
		})
		if err != nil {
			return fail(fmt.Errorf("open redis store: %w", err))
		}
		b.state, b.locker = rs, rs
		b.closers = append(b.closers, rs.Close)
	}
	if cfg.Journal.Kind == "postgres" {
		pj, err := pgjournal.Open(ctx, pgjournal.Options{URL: cfg.Journal.URL, Schema: cfg.Journal.Schema})
		if err != nil {
			return fail(fmt.Errorf("open postgres journal: %w", err))
		}
		b.journal = pj
		b.closers = append(b.closers, func() error { pj.Close(); return nil })
	}
	return b, nil
}
