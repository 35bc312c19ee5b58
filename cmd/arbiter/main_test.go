package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("listen: 127.0.0.1:9090\ntenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users: [{id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: 127.0.0.1:9090\ntenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users:\n      - id: u\n        role: boss\n        keys: [{token: abcdefgh, scopes: [read, root]}]\n"), 0o644)

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"check-config", "-config", good}, nil, &out, &errOut); code != 0 {
		t.Fatalf("valid config: exit %d, %s", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code := run(context.Background(), []string{"check-config", "-config", bad}, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("invalid config: exit %d", code)
	}
	for _, want := range []string{`line 7: tenants[0].users[0].role: role "boss" is not defined`, `line 8: tenants[0].users[0].keys[0].scopes[1]: unknown scope "root"`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if code := run(context.Background(), []string{"check-config", "-config", filepath.Join(dir, "missing.yaml")}, nil, &out, &errOut); code != 1 {
		t.Errorf("missing file: exit %d", code)
	}
	if code := run(context.Background(), []string{"frobnicate"}, nil, &out, &errOut); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// TestServeLocalSetup starts `arbiter serve` with no configuration, as the
// README's quick start does, and talks to it.
func TestServeLocalSetup(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	t.Setenv("ARBITER_LISTEN", "127.0.0.1:0")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("FIREWORKS_API_KEY", "")

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, nil, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var addr, key string
	deadline := time.After(20 * time.Second)
	for addr == "" || key == "" {
		got := make(chan bool, 1)
		go func() { got <- lines.Scan() }()
		select {
		case ok := <-got:
			if !ok {
				t.Fatalf("serve exited early")
			}
		case <-deadline:
			t.Fatal("serve did not start")
		}
		l := lines.Text()
		if a, ok := strings.CutPrefix(l, "arbiter listening on "); ok {
			addr = a
		}
		if k, ok := strings.CutPrefix(l, "local API key: "); ok {
			key = k
		}
	}
	go io.Copy(io.Discard, pr)

	post := func(body string) map[string]any {
		req, _ := http.NewRequest("POST", addr+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, m)
		}
		return m
	}
	// Deterministic routes work without a model; free text says how to
	// configure one.
	if m := post(`{"conversation_id":"c1","text":"/tasks"}`); len(m["executed"].([]any)) != 1 {
		t.Errorf("/tasks: %v", m)
	}
	if m := post(`{"conversation_id":"c1","text":"create a task"}`); !strings.Contains(m["say"].(string), "OPENAI_API_KEY") {
		t.Errorf("free text without a model: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "arbiter.db")); err != nil {
		t.Errorf("store not in ./data: %v", err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestChatLocalSetup drives `arbiter chat` through its stdin.
func TestChatLocalSetup(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("FIREWORKS_API_KEY", "")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"chat"}, strings.NewReader("/tasks\nhello\n/help\n\n"), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"chatting as Local User", "You have no open tasks.", "OPENAI_API_KEY", "/tasks — my tasks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRecordReplayFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-record", t.TempDir(), "-replay", t.TempDir()}, nil, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "exclude each other") {
		t.Errorf("both flags: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"check-config", "-record", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("-record on check-config: exit %d", code)
	}
}
