package server_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/store"
)

// A running server prunes the journal by its retention: a turn older than
// retention.turns is gone once Run has started; with keep: true it stays.
func TestRunPrunesByRetention(t *testing.T) {
	for _, keep := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) { runPrunes(t, keep) })
	}
}

// runPrunes runs a server whose journal holds a turn past retention.turns
// in a bubble, and checks the turn once Run's first pruning is done.
func runPrunes(t *testing.T, keep bool) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg, err := config.Parse(strings.NewReader(`retention: {turns: 1h, keep: `+strconv.FormatBool(keep)+`}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users: [{id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-dmitry-1", scopes: [read]}]}]
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	s, err := server.Build(cfg, server.Builtin(), server.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: s.Keys[0].Identity, Chat: "c1", Text: "/tasks"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// Run prunes at start, then waits for its next round: once every
	// goroutine of the bubble is blocked, the first pruning is done.
	synctest.Wait()
	_, err = s.Journal.GetTurn(context.Background(), "acme", out.TurnID)
	gone := errors.Is(err, store.ErrNotFound)
	if !gone && err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	s.Close()
	if gone == keep {
		t.Errorf("keep=%v: the turn past retention gone=%v", keep, gone)
	}
}

// A store that expires records by itself keeps execution records as long
// as retention says: its default, the configured period, or with keep a
// century.
func TestExecutionRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, tt := range []struct {
		r    config.Retention
		want time.Duration
	}{
		{config.Retention{}, server.DefaultExecutionRetention},
		{config.Retention{Executions: config.Duration(30 * day)}, 30 * day},
		{config.Retention{Executions: config.Duration(30 * day), Keep: true}, 100 * 365 * day},
	} {
		if got := server.ExecutionRetention(tt.r); got != tt.want {
			t.Errorf("ExecutionRetention(%+v) = %v, want %v", tt.r, got, tt.want)
		}
	}
}
