package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/internal/bench"
)

// Load shape for -stores: 64 conversations at once, as the scale-out
// acceptance asks.
const (
	loadConversations   = 64
	loadPerConversation = 40
	loadRounds          = 4
)

// compareStores measures turns per second on the embedded store, on Redis
// with the embedded journal and, when PostgreSQL answers at pgURL, on
// Redis with the PostgreSQL journal, alternating; and the Redis round trips
// and commands per turn.
func compareStores(redisURL, pgURL string) error {
	ctx := context.Background()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", redisURL, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	run := "arbiter_bench_" + hex.EncodeToString(b)
	prefix := run + ":"
	var dirs []string
	var pg *pgx.Conn
	defer func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		if pg != nil {
			_, _ = pg.Exec(ctx, `DROP SCHEMA IF EXISTS `+run+` CASCADE`)
			pg.Close(ctx)
		}
	}()
	setups := []string{"sqlite", "redis"}
	if pgURL != "" {
		if pg, err = pgx.Connect(ctx, pgURL); err != nil {
			fmt.Fprintf(os.Stderr, "arbiter-bench: PostgreSQL at %s: %v; measuring without it\n", pgURL, err)
		} else {
			setups = append(setups, "redis+postgres")
		}
	}
	engines := map[string]*bench.Engine{}
	for _, setup := range setups {
		dir, err := os.MkdirTemp("", "arbiter-bench-")
		if err != nil {
			return err
		}
		dirs = append(dirs, dir)
		storeYAML, journalYAML := fmt.Sprintf(`{kind: sqlite, path: %q}`, dir+"/arbiter.db"), ""
		if setup != "sqlite" {
			storeYAML = fmt.Sprintf(`{kind: redis, url: %q, prefix: %q}`, redisURL, prefix+setup+":")
		}
		if setup == "redis+postgres" {
			// path: where the embedded tools keep their file.
			journalYAML = fmt.Sprintf(`{kind: postgres, url: %q, schema: %s, path: %q}`, pgURL, run, dir+"/tools.db")
		}
		e, err := bench.NewEngineOn(dir, storeYAML, journalYAML, kinds.All())
		if err != nil {
			return fmt.Errorf("%s: %w", setup, err)
		}
		defer e.Close()
		engines[setup] = e
	}

	rates := map[string]float64{}
	var commands, trips, redisTurns int64
	for range loadRounds {
		for _, setup := range setups {
			e := engines[setup]
			beforeCommands, beforeTrips := commandsProcessed(rdb), e.RoundTrips()
			rate, err := e.Load(loadConversations, loadPerConversation)
			if err != nil {
				return fmt.Errorf("%s: %w", setup, err)
			}
			if setup == "redis" {
				commands += commandsProcessed(rdb) - beforeCommands - 1 // the INFO itself
				trips += e.RoundTrips() - beforeTrips
				redisTurns += loadConversations * loadPerConversation
			}
			rates[setup] = max(rates[setup], rate)
		}
	}
	fmt.Printf("%d concurrent conversations, %d turns each, best of %d rounds (turns/s):\n", loadConversations, loadPerConversation, loadRounds)
	for _, setup := range setups {
		fmt.Printf("  %-15s %6.0f\n", setup, rates[setup])
	}
	line := fmt.Sprintf("sqlite_turns_per_second=%.0f redis_turns_per_second=%.0f redis_vs_sqlite=%.2f", rates["sqlite"], rates["redis"], rates["redis"]/rates["sqlite"])
	if r, ok := rates["redis+postgres"]; ok {
		line += fmt.Sprintf(" redis_pg_turns_per_second=%.0f redis_pg_vs_sqlite=%.2f", r, r/rates["sqlite"])
	}
	fmt.Printf("%s redis_round_trips_per_turn=%.2f redis_commands_per_turn=%.1f\n", line,
		float64(trips)/float64(redisTurns), float64(commands)/float64(redisTurns))
	return nil
}

// commandsProcessed reads the server's total_commands_processed (commands
// inside scripts included).
func commandsProcessed(rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
