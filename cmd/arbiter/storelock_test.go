package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecondProcessOnTheEmbeddedStoreRefuses runs `arbiter serve` and then,
// on the same SQLite file, `arbiter mcp` and a second `arbiter serve`: each
// refuses at start, naming the process that holds the file.
func TestSecondProcessOnTheEmbeddedStoreRefuses(t *testing.T) {
	bin := slowBinary(t, "builds and runs the command")
	const cfg = `listen: 127.0.0.1:0
store: {kind: sqlite, path: data/arbiter.db}
tenants:
  - id: a
    roles: {owner: {tools: ["*"]}}
    users: [{id: u, role: owner, keys: [{token: k-lock-test-1, scopes: [read]}]}]
tools:
  taskboard: {}
`
	holder := startInstance(t, bin, cfg)
	dir := filepath.Dir(holder.cmd.Args[len(holder.cmd.Args)-1])
	for _, args := range [][]string{{"mcp", "-config", "arbiter.yaml"}, {"serve", "-config", "arbiter.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ARBITER_KEY=k-lock-test-1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("arbiter %s beside a running serve: %v, want exit status 1\n%s", args[0], err, stderr.String())
			continue
		}
		for _, want := range []string{"in use by another process", fmt.Sprintf("process %d", holder.cmd.Process.Pid), "data/arbiter.db.lock"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("arbiter %s: stderr lacks %q:\n%s", args[0], want, stderr.String())
			}
		}
	}
}
