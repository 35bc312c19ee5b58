package server_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
)

// TestSecondOpenOfTheEmbeddedStoreRefuses: while one server holds the
// SQLite file, a second one on it refuses at start and names the holder;
// a reader opens beside it; once the holder closes, the file is free.
func TestSecondOpenOfTheEmbeddedStoreRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arbiter.db")
	build := func(reader bool) (*server.Server, error) {
		cfg, err := config.Parse(strings.NewReader("tenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users: [{id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}]\ntools:\n  taskboard: {}\n"), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store.Path, cfg.Store.Reader = path, reader
		return server.Build(cfg, server.Builtin(), server.Options{})
	}
	first, err := build(false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = build(false)
	if !errors.Is(err, server.ErrStoreInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open: %v, want it refused naming this process", err)
	}
	reader, err := build(true)
	if err != nil {
		t.Fatalf("a reader beside the holder: %v", err)
	}
	reader.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := build(false)
	if err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
	again.Close()
}
