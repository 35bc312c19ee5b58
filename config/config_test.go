package config

import (
	"strings"
	"testing"
	"time"
)

const example = `listen: 127.0.0.1:8080
store: {kind: sqlite, path: data/arbiter.db}
models:
  - {name: primary, kind: openai, base_url: "http://127.0.0.1:9999/v1", model: gpt-oss-20b, api_key_env: PRIMARY_KEY}
memory: {window: 16, ttl: 30m, pause: 10m}
tenants:
  - id: acme
    timezone: Europe/Moscow
    roles:
      owner: {tools: ["*"]}
      viewer: {tools: [list_my_tasks]}
    users:
      - id: dmitry
        name: Дмитрий
        role: owner
        keys: [{token: "k-dmitry", scopes: [read, "write:safe", "write:full"]}]
      - id: olga
        name: Ольга
        role: owner
        keys: [{token: "k-olga-ro", scopes: [read]}]
      - id: ivan
        name: Иван
        role: viewer
        keys: [{token_env: IVAN_TOKEN, scopes: [read]}]
tools:
  taskboard: {columns: [Входящие, В работе, Готово], confirm: {create_task: always, complete_task: always}}
`

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseExample(t *testing.T) {
	cfg, err := Parse(strings.NewReader(example), env(map[string]string{"PRIMARY_KEY": "sk-1", "IVAN_TOKEN": "k-ivan-123"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.Listen != "127.0.0.1:8080" || cfg.Store.Path != "data/arbiter.db" {
		t.Errorf("listen/store = %q %q", cfg.Listen, cfg.Store.Path)
	}
	if len(cfg.Models) != 1 || cfg.Models[0].Model != "gpt-oss-20b" {
		t.Errorf("models = %+v", cfg.Models)
	}
	if time.Duration(cfg.Memory.TTL) != 30*time.Minute || time.Duration(cfg.Memory.Pause) != 10*time.Minute {
		t.Errorf("memory = %+v", cfg.Memory)
	}
	u := cfg.Tenants[0].Users[2]
	if got := ResolveToken(u.Keys[0], env(map[string]string{"IVAN_TOKEN": "k-ivan-123"})); got != "k-ivan-123" {
		t.Errorf("token_env resolved to %q", got)
	}
	if cfg.Tools.Taskboard.Confirm["create_task"] != "always" {
		t.Errorf("taskboard confirm = %v", cfg.Tools.Taskboard.Confirm)
	}
}

func TestParseErrorsCarryLines(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "listen: x\nlisten_port: 5\n", "line 2"},
		{"bad yaml", "tenants: [\n", "line"},
		{"bad duration", "memory:\n  ttl: soon\n", `line 2: memory.ttl: "soon" is not a duration`},
		{"unknown role", "tenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users:\n      - id: u\n        role: admin\n        keys: [{token: abcdefgh, scopes: [read]}]\n", `line 6: tenants[0].users[0].role: role "admin" is not defined`},
		{"unknown scope", "tenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users:\n      - id: u\n        role: owner\n        keys:\n          - token: abcdefgh\n            scopes: [read, admin]\n", `line 9: tenants[0].users[0].keys[0].scopes[1]: unknown scope "admin"`},
		{"duplicate token", "tenants:\n  - id: a\n    roles: {owner: {tools: ['*']}}\n    users:\n      - {id: u, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}\n      - {id: v, role: owner, keys: [{token: abcdefgh, scopes: [read]}]}\n", "line 6: tenants[0].users[1].keys[0]: the same token is already used by a/u"},
		{"model without kind", "models:\n  - {name: p, model: m}\n", `line 2: models[0]: kind is required`},
		{"unset env", "models:\n  - {name: p, kind: openai, model: m, api_key_env: NOPE}\n", "line 2: models[0].api_key_env: environment variable NOPE is empty or unset"},
		{"bad zone", "tenants:\n  - id: a\n    timezone: Mars/Olympus\n", `line 3: tenants[0].timezone: unknown time zone`},
		{"bad confirm", "tools:\n  taskboard:\n    confirm: {create_task: sometimes}\n", `line 3: tools.taskboard.confirm.create_task: unknown confirm policy "sometimes"`},
		{"redis without url", "store: {kind: redis}\n", `line 1: store: a redis store needs url`},
		{"postgres without url", "journal: {kind: postgres}\n", `line 1: journal: a postgres journal needs url`},
		{"unknown strategy model", "models:\n  - {name: a, kind: openai, model: m, api_key: k}\nstrategies:\n  fast: [a, b]\n", `line 4: strategies.fast[1]: no model named "b"`},
		{"telegram without token", "tenants:\n  - {id: a}\nchannels:\n  telegram: {token_env: NOPE, tenant: a}\n", `line 4: channels.telegram.token_env: the bot token must come from a set environment variable`},
		{"telegram unknown tenant", "channels:\n  telegram: {token_env: NOPE, tenant: zz}\n", `channels.telegram.tenant: no tenant "zz" is defined`},
		{"mcp with both transports", "tools:\n  mcp:\n    servers:\n      - {name: x, command: [a], url: \"http://h\"}\n", `line 4: tools.mcp.servers[0]: set exactly one of command (stdio) or url`},
		{"mcp elicitation with a short timeout", "tools:\n  mcp:\n    servers:\n      - {name: x, command: [a], elicitation: true, timeout: 30s}\n", `line 4: tools.mcp.servers[0].timeout: with sampling or elicitation on, a call's timeout (30s) must be longer than the wait for the user's answer (ask_timeout 1m0s)`},
		{"mcp channel on the API's path", "channels:\n  mcp: {path: /v1/mcp}\n", `line 2: channels.mcp.path: must be a path of its own such as /mcp, not "/v1/mcp"`},
		{"trello and taskboard", "tools:\n  taskboard: {}\n  trello: {key_env: K, board: B}\n", `line 3: tools.trello: choose one task board`},
		{"http tool bad risk", "tools:\n  http:\n    - {name: pay, url: \"http://x\", risk: admin, input_schema: {type: object}}\n", `tools.http[0].risk: unknown risk "admin"`},
		{"bad calendar backend", "tools:\n  calendar: {backend: outlook}\n", `line 2: tools.calendar.backend: unknown calendar backend "outlook"`},
		{"unknown assistant", "tenants:\n  - id: a\n    assistant: desk\n", `line 3: tenants[0].assistant: no assistant named "desk"`},
		{"missing prompt file", "assistants:\n  desk: {prompt_file: no/such/prompt.md}\n", `assistants.desk.prompt_file: assistant prompt: open no/such/prompt.md`},
		{"unset variable in a URL", "tools:\n  http:\n    - {name: pay, description: d, url: \"${PAYSIM_URL}/pay\", risk: read, input_schema: {type: object}}\n", `line 3: tools.http[0].url: environment variable PAYSIM_URL is empty or unset`},
		{"negative limit", "assistants:\n  desk:\n    limits: {tool_calls: -1}\n", `line 3: assistants.desk.limits.tool_calls: must not be negative`},
		{"negative chunk timeout", "models:\n  - name: a\n    kind: openai\n    model: m\n    api_key: k\n    chunk_timeout: -5s\n", `line 6: models[0].chunk_timeout: duration "-5s" is negative`},
		{"negative first-token timeout", "models:\n  - {name: a, kind: openai, model: m, api_key: k, first_token_timeout: -1s}\n", `line 2: models[0].first_token_timeout: duration "-1s" is negative`},
		{"negative token rate", "models:\n  - name: a\n    kind: openai\n    model: m\n    api_key: k\n    min_token_rate: -3\n", `line 6: models[0].min_token_rate: must not be negative`},
		{"bad stream flag", "models:\n  - name: a\n    kind: openai\n    model: m\n    stream: sometimes\n", `line 5`},
		{"unknown live context policy", "assistants:\n  desk:\n    live_context: sometimes\n", `assistants.desk.live_context: unknown policy "sometimes"`},
		{"hand-off without a loop", "assistants:\n  desk:\n    hand_off: true\n", `assistants.desk.hand_off: the hand-off tool goes with mode loop`},
		{"preflight without a loop", "assistants:\n  desk:\n    mode: interview\n    preflight: [{tool: list_my_tasks}]\n", `line 4: assistants.desk.preflight: preflight reads go with mode loop`},
		{"limits without a loop", "assistants:\n  desk:\n    limits: {model_calls: 3}\n", `line 3: assistants.desk.limits: a task's limits go with mode loop`},
		{"questions without an interview", "assistants:\n  desk:\n    mode: loop\n    max_questions: 2\n", `line 4: assistants.desk.max_questions: max_questions goes with mode interview`},
		{"reply bound without an interview", "assistants:\n  desk:\n    max_reply_chars: 100\n", `line 3: assistants.desk.max_reply_chars: max_reply_chars goes with mode interview`},
		{"unknown router word list", "assistants:\n  front:\n    mode: router\n    router:\n      words: {buyers: [buy*]}\n", `line 5: assistants.front.router.words: unknown word list "buyers"`},
		{"router word matching every word", "assistants:\n  front:\n    mode: router\n    router:\n      words: {buy: [\"*\"]}\n", `assistants.front.router.words: word list buy: pattern "*": an empty word`},
		{"router words twice", "assistants:\n  front:\n    mode: router\n    router: {words: {buy: [buy]}, words_file: w.yaml}\n", `assistants.front.router: set words or words_file, not both`},
		{"missing router words file", "assistants:\n  front:\n    mode: router\n    router: {words_file: no/such/words.yaml}\n", `assistants.front.router.words_file: router words: open no/such/words.yaml`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml), env(nil))
			if err == nil {
				t.Fatal("Parse accepted an invalid config")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseAssistants(t *testing.T) {
	cfg, err := Parse(strings.NewReader(`assistants:
  support:
    mode: loop
    prompt: You are the support desk.
    tools: [get_*, search_support_policy]
    limits: {model_calls: 6, tool_calls: 12, deadline: 45s, result_bytes: 8000, total_bytes: 32000, same_call: 2}
tenants:
  - {id: a, assistant: support}
`), env(nil))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	a := cfg.Assistants["support"]
	if a.Mode != "loop" || len(a.Tools) != 2 || a.Limits.ToolCalls != 12 || time.Duration(a.Limits.Deadline) != 45*time.Second || cfg.Tenants[0].Assistant != "support" {
		t.Errorf("assistant = %+v, tenant %+v", a, cfg.Tenants[0])
	}
	if p, err := a.LoadPrompt(""); err != nil || p != "You are the support desk." {
		t.Errorf("prompt %q %v", p, err)
	}
}

func TestParseExpandsURLs(t *testing.T) {
	cfg, err := Parse(strings.NewReader(`models:
  - {name: m, kind: openai, base_url: "${OPENAI_BASE_URL:-https://api.openai.com/v1}", model: "${ARBITER_MODEL:-gpt-4.1-mini}", api_key: k}
tools:
  http:
    - {name: pay, description: d, url: "${PAYSIM_URL}/payments/status", risk: read, input_schema: {type: object}}
`), env(map[string]string{"PAYSIM_URL": "http://127.0.0.1:9000", "ARBITER_MODEL": "local-7b"}))
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Models[0]; m.BaseURL != "https://api.openai.com/v1" || m.Model != "local-7b" {
		t.Errorf("model = %+v", m)
	}
	if u := cfg.Tools.HTTP[0].URL; u != "http://127.0.0.1:9000/payments/status" {
		t.Errorf("url = %q", u)
	}
}

// Nine mistakes of different kinds, all reported in one run, each at its
// line, in the file's words.
func TestParseReportsEveryMistake(t *testing.T) {
	const file = `listen: 127.0.0.1:8080
lisen: 127.0.0.1:9090
memory:
  window: many
  ttl: soon
store: [sqlite]
models:
  - {name: p, model: m}
tenants:
  - id: a
    timezone: Mars/Olympus
    roles: {owner: {tols: ["*"]}}
    users:
      - id: u
        role: admin
        keys: [{token: abcdefgh, scopes: [read, admin]}]
retry: {invalid_fallback: sometimes}
`
	_, err := Parse(strings.NewReader(file), env(nil))
	if err == nil {
		t.Fatal("Parse accepted nine mistakes")
	}
	want := []string{
		`line 2: lisen: unknown key "lisen" (did you mean "listen"?)`,
		`line 4: memory.window: expected a whole number, found "many"`,
		`line 5: memory.ttl: "soon" is not a duration`,
		`line 6: store: expected a mapping (key: value), found a list`,
		`line 8: models[0]: kind is required`,
		`line 11: tenants[0].timezone: unknown time zone "Mars/Olympus"`,
		`line 12: tenants[0].roles.owner.tols: unknown key "tols" (did you mean "tools"?)`,
		`line 15: tenants[0].users[0].role: role "admin" is not defined`,
		`line 16: tenants[0].users[0].keys[0].scopes[1]: unknown scope "admin"`,
		`line 17: retry.invalid_fallback: expected true or false, found "sometimes"`,
	}
	got := err.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	for _, goWords := range []string{"config.", "!!str", "!!seq", "unmarshal"} {
		if strings.Contains(got, goWords) {
			t.Errorf("the errors speak Go (%q):\n%s", goWords, got)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	cfg, err := Parse(strings.NewReader(""), env(nil))
	if err != nil || cfg == nil {
		t.Fatalf("empty config: %v", err)
	}
}

func TestRetentionInDays(t *testing.T) {
	cfg, err := Parse(strings.NewReader("retention: {turns: 90d, executions: 400d, every: 5m}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(cfg.Retention.Turns) != 90*24*time.Hour || time.Duration(cfg.Retention.Executions) != 400*24*time.Hour ||
		time.Duration(cfg.Retention.Every) != 5*time.Minute {
		t.Errorf("retention = %+v", cfg.Retention)
	}
	if _, err := Parse(strings.NewReader("retention: {turns: 9x0d}\n"), func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "90d") {
		t.Errorf("a bad period: %v", err)
	}
}

func TestLifetimes(t *testing.T) {
	const file = `memory: {ttl: 1h}
lifetimes: {case: 60d, skill: 7d, interview: 2d, offer: 12h}
assistants:
  desk: {mode: loop, lifetimes: {case: 90d}}
  interviewer: {mode: interview, lifetimes: {interview: 36h}}
`
	cfg, err := Parse(strings.NewReader(file), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Lifetimes
	if time.Duration(l.Case) != 60*24*time.Hour || time.Duration(l.Skill) != 7*24*time.Hour ||
		time.Duration(l.Interview) != 48*time.Hour || time.Duration(l.Offer) != 12*time.Hour {
		t.Errorf("lifetimes = %+v", l)
	}
	if time.Duration(cfg.Assistants["desk"].Lifetimes.Case) != 90*24*time.Hour ||
		time.Duration(cfg.Assistants["interviewer"].Lifetimes.Interview) != 36*time.Hour {
		t.Errorf("assistants' lifetimes = %+v", cfg.Assistants)
	}
}

// Lifetimes that cannot mean what they say are refused, each at its line.
func TestLifetimesMistakes(t *testing.T) {
	const file = `memory: {ttl: 2h}
lifetimes:
  case: 1h
  skil: 3d
  offer: soon
assistants:
  desk:
    mode: loop
    lifetimes: {interview: 2d, skill: 3d}
  interviewer:
    mode: interview
    memory: {ttl: 40d}
`
	_, err := Parse(strings.NewReader(file), env(nil))
	if err == nil {
		t.Fatal("Parse accepted the mistakes")
	}
	for _, w := range []string{
		`line 3: lifetimes.case: lifetimes.case (1h0m0s) is shorter than memory.ttl (2h0m0s)`,
		`line 4: lifetimes.skil: unknown key "skil" (did you mean "skill"?)`,
		`line 5: lifetimes.offer: "soon" is not a duration`,
		`line 9: assistants.desk.lifetimes.interview: only an interview assistant (mode interview) has interviews`,
		`line 9: assistants.desk.lifetimes.skill: only a router assistant (mode router) has skills`,
		`line 12: assistants.interviewer.memory.ttl: lifetimes.case (1h0m0s) is shorter than assistants.interviewer.memory.ttl (960h0m0s)`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%s", w, err)
		}
	}
}

// A memory kept longer than the default case lifetime is refused at its
// own line.
func TestMemoryLongerThanCase(t *testing.T) {
	_, err := Parse(strings.NewReader("memory:\n  ttl: 40d\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "line 2: memory.ttl: lifetimes.case (720h0m0s) is shorter than memory.ttl (960h0m0s)") {
		t.Errorf("err = %v", err)
	}
}
