package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/internal/bench"
)

// Load shape for -stores: 64 conversations at once, as the scale-out
// acceptance asks.
const (
	loadConversations   = 64
	loadPerConversation = 40
	loadRounds          = 2
)

// compareStores measures turns per second on the embedded store and on
// Redis, alternating, and the Redis commands per turn from the server's
// own counter.
func compareStores(redisURL string) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", redisURL, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "arbiter-bench-" + hex.EncodeToString(b) + ":"
	dirs := []string{}
	defer func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	}()
	open := func(store string) (*bench.Engine, error) {
		dir, err := os.MkdirTemp("", "arbiter-bench-")
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
		if store == "sqlite" {
			return bench.NewEngine(dir)
		}
		return bench.NewEngineOn(dir, fmt.Sprintf(`{kind: redis, url: %q, prefix: %q}`, redisURL, prefix), kinds.All())
	}
	sqliteEngine, err := open("sqlite")
	if err != nil {
		return err
	}
	defer sqliteEngine.Close()
	redisEngine, err := open("redis")
	if err != nil {
		return err
	}
	defer redisEngine.Close()

	var rates = map[string][]float64{}
	var commands, redisTurns int64
	for range loadRounds {
		for _, w := range []struct {
			name string
			e    *bench.Engine
		}{{"sqlite", sqliteEngine}, {"redis", redisEngine}} {
			before := commandsProcessed(rdb)
			rate, err := w.e.Load(loadConversations, loadPerConversation)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if w.name == "redis" {
				commands += commandsProcessed(rdb) - before - 1 // the INFO itself
				redisTurns += loadConversations * loadPerConversation
			}
			rates[w.name] = append(rates[w.name], rate)
		}
	}
	best := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			m = max(m, x)
		}
		return m
	}
	fmt.Printf("%d concurrent conversations, %d turns each, best of %d rounds:\n", loadConversations, loadPerConversation, loadRounds)
	fmt.Printf("sqlite_turns_per_second=%.0f redis_turns_per_second=%.0f redis_commands_per_turn=%.1f (server-side, commands inside scripts included)\n",
		best(rates["sqlite"]), best(rates["redis"]), float64(commands)/float64(redisTurns))
	return nil
}

// commandsProcessed reads the server's total_commands_processed.
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
