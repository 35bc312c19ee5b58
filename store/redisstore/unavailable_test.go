package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// freePort returns a loopback TCP port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// privateServer is a redis-server of the test's own, without persistence.
type privateServer struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

// startPrivate starts redis-server on port, or skips the test when the
// binary is missing.
func startPrivate(t *testing.T, port int) *privateServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server binary to start a private server")
	}
	p := &privateServer{t: t, port: port}
	p.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--logfile", "")
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(p.stop)
	c := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1})
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(t.Context()).Err() == nil {
			return p
		}
		if i == 100 {
			t.Fatalf("private redis-server on %s does not answer", p.addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *privateServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// stop kills the server and waits until it is gone. Stopping twice is
// harmless.
func (p *privateServer) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// TestOpenClosedPort: Open against a port nobody listens on fails with
// ErrUnavailable.
func TestOpenClosedPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := Open(ctx, Options{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", freePort(t))})
	if err == nil {
		s.Close()
		t.Fatal("Open against a closed port succeeded")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open against a closed port: %v, want ErrUnavailable", err)
	}
}

// TestServerDown stops the server under a store: every method fails with
// ErrUnavailable, a held lease reports Lost within its TTL, and once a
// server is back on the address nothing of the failed calls is there and
// the store works again without reopening.
func TestServerDown(t *testing.T) {
	port := freePort(t)
	srv := startPrivate(t, port)
	ctx := t.Context()
	s, err := Open(ctx, Options{URL: "redis://" + srv.addr() + "/0", LockTTL: shortTTL, LockWait: time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	now := time.Now()
	conv := store.Conversation{StartedAt: now, UpdatedAt: now, Messages: []store.Message{{Role: store.RoleUser, Text: "hi", At: now}}}
	p := store.PendingAction{ID: "p1", Tool: "create_card", Args: json.RawMessage(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	held, err := s.Lock(ctx, "held")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer held.Release()

	srv.stop()
	calls := []struct {
		name string
		call func() error
	}{
		{"LoadConversation", func() error { _, err := s.LoadConversation(ctx, key); return err }},
		{"GetPending", func() error { _, err := s.GetPending(ctx, key); return err }},
		{"TakePending", func() error { _, err := s.TakePending(ctx, key, "p1"); return err }},
		{"ClaimMessage", func() error { _, _, err := s.ClaimMessage(ctx, key, "m-down", "turn-down", now); return err }},
		{"BeginExecution", func() error {
			_, _, err := s.BeginExecution(ctx, store.ExecutionRecord{Tenant: "t", IdempotencyKey: "idem-down"})
			return err
		}},
		{"FinishExecution", func() error { return s.FinishExecution(ctx, "t", "idem-down", json.RawMessage(`1`), now) }},
		{"Commit", func() error {
			return s.Commit(ctx, store.Commit{Key: key, Conversation: &conv, PutPending: &p, MessageID: "m-down", Reply: json.RawMessage(`"r"`)})
		}},
		{"Lock", func() error {
			l, err := s.Lock(ctx, "other")
			if err == nil {
				l.Release()
			}
			return err
		}},
		{"Accept", func() error {
			_, err := s.Accept(ctx, store.ChannelItem{Channel: "telegram", ID: "1:down", Payload: json.RawMessage(`{}`)})
			return err
		}},
		{"Pending", func() error { _, err := s.Pending(ctx, "telegram", 10); return err }},
		{"Done", func() error { return s.Done(ctx, "telegram", "1:down") }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the server down: %v, want ErrUnavailable", c.name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s took %v to fail", c.name, d)
		}
	}
	waitLost(t, "lease held while the server went down", held, 3*shortTTL)

	startPrivate(t, port) // empty: the old server kept nothing
	_, err = s.LoadConversation(ctx, key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("memory after the outage: %v, want ErrNotFound (the failed commit wrote nothing)", err)
	}
	if _, claimed, err := s.ClaimMessage(ctx, key, "m-down", "turn-2", now); err != nil || !claimed {
		t.Errorf("claim after the outage: claimed=%v, %v; want a fresh claim", claimed, err)
	}
	if fresh, err := s.Accept(ctx, store.ChannelItem{Channel: "telegram", ID: "1:down"}); err != nil || !fresh {
		t.Errorf("Accept after the outage: fresh=%v, %v; want a fresh item", fresh, err)
	}
	l, err := s.Lock(ctx, key.String())
	if err != nil {
		t.Fatalf("Lock after the outage: %v", err)
	}
	defer l.Release()
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: l.Fence(), Conversation: &conv}); err != nil {
		t.Errorf("Commit after the outage: %v", err)
	}
}

// TestClosed: after Close every method fails with ErrUnavailable, and a
// lease's Lost closes since nothing renews it any more.
func TestClosed(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	l := storetest.MustLock(t, s, "k")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitLost(t, "lease of a closed store", l, time.Second)
	l.Release()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	if _, err := s.LoadConversation(ctx, key); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("LoadConversation after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Lock(ctx, "k2"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Lock after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Commit(ctx, store.Commit{Key: key, DropPending: true}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Commit after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Accept(ctx, store.ChannelItem{Channel: "telegram", ID: "1:1"}); !errors.Is(err, store.ErrUnavailable) ||
		!strings.Contains(err.Error(), "telegram/1:1") {
		t.Errorf("Accept after Close: %v, want ErrUnavailable naming the item", err)
	}
	if _, err := s.Pending(ctx, "telegram", 1); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Pending after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Done(ctx, "telegram", "1:1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Done after Close: %v, want ErrUnavailable", err)
	}
}

// TestUnavailableClassification pins which errors mean "retry later".
func TestUnavailableClassification(t *testing.T) {
	s := &Store{}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{redis.ErrClosed, true},
		{redis.ErrPoolTimeout, true},
		{errors.New("LOADING Redis is loading the dataset in memory"), true},
	} {
		got := errors.Is(s.fail(context.Background(), "op", "k", tt.err), store.ErrUnavailable)
		if got != tt.want {
			t.Errorf("fail(%v) unavailable = %v, want %v", tt.err, got, tt.want)
		}
	}
	// Error replies are the server's answer, not an outage, except for a
	// server that cannot serve (loading, read-only, out of memory).
	ctx := t.Context()
	c := openTest(t, Options{}).rdb
	for _, tt := range []struct {
		args []any
		want bool
	}{
		{[]any{"NOSUCHCOMMAND"}, false},
		{[]any{"EVAL", "return redis.error_reply('OOM command not allowed')", 0}, true},
		{[]any{"EVAL", "return redis.error_reply('READONLY You can not write')", 0}, true},
		{[]any{"EVAL", "return redis.error_reply('WRONGTYPE nope')", 0}, false},
	} {
		err := c.Do(ctx, tt.args...).Err()
		if err == nil {
			t.Fatalf("%v succeeded", tt.args)
		}
		if got := errors.Is(s.fail(ctx, "op", "k", err), store.ErrUnavailable); got != tt.want {
			t.Errorf("fail(%v) unavailable = %v, want %v", err, got, tt.want)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.fail(canceled, "op", "k", errors.New("i/o")); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("fail with an ended context = %v, want context.Canceled only", err)
	}
}

// TestCloseWhileLocking closes a store while goroutines take and release
// locks: every Lock either returns a lease or ErrUnavailable, and Close
// returns once no renewal runs.
func TestCloseWhileLocking(t *testing.T) {
	s := openTest(t, Options{})
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				l, err := s.Lock(context.Background(), fmt.Sprintf("k%d-%d", g, i%3))
				if err != nil {
					done <- err
					return
				}
				l.Release()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range 4 {
		if err := <-done; !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Lock during Close: %v, want ErrUnavailable", err)
		}
	}
}
