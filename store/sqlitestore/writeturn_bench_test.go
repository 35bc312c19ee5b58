package sqlitestore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// BenchmarkWriteTurn64 is the store's share of a loop turn that runs one
// write, 64 turns at once as in the peers' comparison: the execution
// record begun and finished, then the commit of a fresh conversation's
// memory with the turn's record (a 2 KB trace, two model calls and the
// tool call). cpu-µs/op is process CPU per turn, the figure the turn's
// cost is made of; waits do not count.
func BenchmarkWriteTurn64(b *testing.B) {
	s := openTest(b, Options{})
	ctx := context.Background()
	trace := json.RawMessage(`{"say":"` + strings.Repeat("x", 2000) + `"}`)
	result := json.RawMessage(`{"status":"ok","data":{"ok":true,"id":"c1"},"observed_at":"2026-12-06T03:07:39.65018819Z"}`)
	args := json.RawMessage(`{"assignee":"Dmitry","title":"Check signup form"}`)
	var next atomic.Int64
	turn := func() error {
		n := next.Add(1)
		id := strconv.FormatInt(time.Now().UnixMilli(), 16) + strconv.FormatInt(n, 16)
		now := time.Now()
		key := chat.ConversationKey{Tenant: "bench", Chat: "w" + strconv.FormatInt(n, 10), User: "u1"}
		idem := "w:" + strconv.FormatInt(n*2654435761%1000003, 16) + strconv.FormatInt(n, 16) + ":1"
		rec := store.ExecutionRecord{Tenant: "bench", IdempotencyKey: idem, Tool: "create_task", ArgsHash: "h", Args: args, TurnID: id, StartedAt: now}
		if _, _, err := s.BeginExecution(ctx, rec); err != nil {
			return err
		}
		if err := s.FinishExecution(ctx, "bench", idem, result, now); err != nil {
			return err
		}
		conv := store.Conversation{UpdatedAt: now, Messages: []store.Message{
			{Role: store.RoleUser, Text: "Create a card: check the signup form, assign it to Dmitry", At: now},
			{Role: store.RoleAssistant, Text: "Done: card created", At: now}}}
		call := store.LLMCall{Provider: "fake", Model: "gpt-oss-20b", Operation: "loop", Status: "ok", InputTokens: 900, OutputTokens: 40, At: now}
		return s.Commit(ctx, store.Commit{Key: key, Conversation: &conv, Turn: &store.TurnRecord{
			TurnID: id, Tenant: "bench", Chat: key.Chat, UserID: "u1", Route: "model", Status: "ok", StartedAt: now,
			LLMCalls:  []store.LLMCall{call, call},
			ToolCalls: []store.ToolCall{{Tool: "create_task", IdempotencyKey: idem, Status: "ok", ArgsHash: "h", At: now}},
			Trace:     trace}})
	}
	if err := turn(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(32) // 64 turns at once on two processors
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := turn(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if cpu := processCPU() - cpu0; cpu0 > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	}
	st := s.GroupStats()
	b.ReportMetric(float64(st.Writes)/float64(max(st.Transactions, 1)), "writes/tx")
}

// The write-ahead log is checkpointed once it holds walCheckpointPages:
// under a stream of commits it stays within a few checkpoints' worth,
// and the pages reach the database file.
func TestWALStaysBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pages int
	if err := s.DB().QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil || pages != walCheckpointPages {
		t.Fatalf("wal_autocheckpoint = %d, %v; want %d", pages, err, walCheckpointPages)
	}
	ctx := context.Background()
	body := json.RawMessage(`{"say":"` + strings.Repeat("x", 3000) + `"}`)
	for i := range 3 * walCheckpointPages {
		key := chat.ConversationKey{Tenant: "t", Chat: "c" + strconv.Itoa(i), User: "u"}
		if err := s.Commit(ctx, store.Commit{Key: key, Turn: &store.TurnRecord{TurnID: "turn-" + strconv.Itoa(i),
			Tenant: "t", Chat: key.Chat, UserID: "u", Route: "model", Status: "ok", StartedAt: time.Now(), Trace: body}}); err != nil {
			t.Fatal(err)
		}
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(2*walCheckpointPages) * 4096; wal.Size() > limit {
		t.Errorf("the log is %d bytes after %d turns, more than %d", wal.Size(), 3*walCheckpointPages, limit)
	}
	db, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if db.Size() < int64(walCheckpointPages)*4096 {
		t.Errorf("the database file is %d bytes: the log was not copied into it", db.Size())
	}
}
