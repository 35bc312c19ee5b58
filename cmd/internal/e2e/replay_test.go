package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
)

const replayConfig = `models:
  - {name: primary, kind: openai, base_url: "MODEL_URL", model: gpt-oss-20b, api_key_env: PRIMARY_KEY}
` + replayTenant

// replayTenant is the configuration below the models of every replay test.
const replayTenant = `tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: dmitry, name: Дмитрий, role: owner, keys: [{token: "k-dmitry", scopes: [read, "write:safe"]}]}
tools:
  taskboard: {}
`

// TestRecordThenReplay records a conversation against a provider, then
// replays it with the provider gone: same replies, no network, and no key
// on disk.
func TestRecordThenReplay(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-secret-1234567"})
	model.Enqueue(
		llmtest.HTTPReply{Content: `{"say":"","tool":"create_task","args":{"title":"Записанная задача"},"done":false,"newTopic":false,"buttons":[]}`},
		llmtest.HTTPReply{Content: `{"say":"Готово, что-то ещё?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`},
	)
	cassettes := t.TempDir()
	run := func(opts server.Options) []chat.Outbound {
		t.Helper()
		env := map[string]string{"PRIMARY_KEY": "sk-secret-1234567"}
		opts.Getenv = func(k string) string { return env[k] }
		n := 0
		opts.NewID = func() string { n++; return fmt.Sprintf("id%04d", n) } // card ids too
		cfg, err := config.Parse(strings.NewReader(strings.Replace(replayConfig, "MODEL_URL", model.URL, 1)), opts.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
		a, err := server.Build(cfg, kinds.All(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		id := a.Keys[0].Identity
		var outs []chat.Outbound
		for _, text := range []string{"Создай задачу", "да", "спасибо"} {
			out, err := a.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: "c1", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, out)
		}
		return outs
	}
	recorded := run(server.Options{Record: cassettes})
	if model.Count() != 2 {
		t.Fatalf("recording made %d model calls, want 2", model.Count())
	}
	files, _ := filepath.Glob(filepath.Join(cassettes, "*.json"))
	if len(files) != 2 {
		t.Fatalf("%d cassette files, want 2", len(files))
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), "sk-secret-1234567") {
			t.Errorf("%s contains the API key", f)
		}
	}

	model.Close() // replay must not need it
	replayed := run(server.Options{Replay: cassettes})
	for i := range recorded {
		r, p := recorded[i], replayed[i]
		if r.Say != p.Say || len(r.Executed) != len(p.Executed) || (r.Pending == nil) != (p.Pending == nil) {
			t.Errorf("turn %d differs on replay:\nrecorded %+v\nreplayed %+v", i, r, p)
		}
	}
	if !strings.Contains(replayed[1].Say, "Записанная задача") {
		t.Errorf("replayed confirmation did not create the recorded task: %q", replayed[1].Say)
	}
}

// TestDocumentedProviderCassettes replays cassettes written from the
// providers' documented answers (testdata/cassettes): a 429 with
// Retry-After is retried once, then the decision runs; an auth failure
// falls back to the next provider.
func TestDocumentedProviderCassettes(t *testing.T) {
	for _, tc := range []struct {
		dir, config string
		wantCalls   string
	}{
		{"openai-rate-limited", `models:
  - {name: openai, kind: openai, model: gpt-4.1-mini, api_key: sk-test-000000}`, "openai/first:rate_limited openai/retry:ok"},
		{"fireworks-auth-then-mistral", `models:
  - {name: fw, kind: fireworks, model: accounts/fireworks/models/gpt-oss-20b, api_key: fw-test-000000}
  - {name: mistral, kind: mistral, model: mistral-medium-latest, api_key: mi-test-000000}`, "fireworks/first:auth mistral/fallback:ok"},
		{"anthropic-overloaded", `models:
  - {name: claude, kind: anthropic, model: claude-haiku-4-5, api_key: sk-ant-test-000000}`, "anthropic/first:transient anthropic/retry:ok"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			yaml := tc.config + "\n" + replayTenant
			cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
			var waited []time.Duration
			a, err := server.Build(cfg, kinds.All(), server.Options{Replay: filepath.Join("testdata", "cassettes", tc.dir),
				Sleep: func(ctx context.Context, d time.Duration) error { waited = append(waited, d); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			out, err := a.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: a.Keys[0].Identity, Chat: "c1", Text: "what do I have?"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Executed) != 1 || out.Executed[0].Tool != "list_my_tasks" {
				t.Fatalf("reply %+v", out)
			}
			rec, err := a.Journal.GetTurn(context.Background(), "acme", out.TurnID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rec.LLMCalls {
				got = append(got, c.Provider+"/"+c.Attempt+":"+c.Status)
			}
			if strings.Join(got, " ") != tc.wantCalls {
				t.Errorf("llm calls %v, want %s", got, tc.wantCalls)
			}
			if tc.dir == "openai-rate-limited" && (len(waited) != 1 || waited[0] != 3*time.Second) {
				t.Errorf("waited %v, want the documented Retry-After of 3s", waited)
			}
		})
	}
}
