package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/media/mediatest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

var update = flag.Bool("update", false, "rewrite the want section of golden transcripts")

// sequence hands out deterministic ids.
type sequence struct {
	mu sync.Mutex
	n  int
}

func (s *sequence) Next() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("id%04d", s.n)
}

// harness is one golden conversation: a wired app on a temp store with a
// scripted model and a fake clock.
type harness struct {
	t       *testing.T
	app     *server.Server
	board   *servertest.BoardWatch
	model   *llmtest.Scripted
	clock   *storetest.Clock
	keys    map[string]chat.Identity
	last    chat.Outbound
	lastKey chat.ConversationKey
	// pending is the id of the last confirmation offered, for $pending.
	pending string
	// tenant is the first tenant of the configuration, which checks read.
	tenant string
	out    strings.Builder
	calls  int // tool calls scripted so far
}

// testEnv is the environment golden configurations see: the example's
// keys come from it.
var testEnv = map[string]string{"TASKBOT_DMITRY_KEY": "k-taskbot-dmitry", "TASKBOT_OLGA_KEY": "k-taskbot-olga"}

func newHarness(t *testing.T, cfgYAML []byte, withModel bool, env map[string]string) *harness {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Parse(bytes.NewReader(cfgYAML), getenv)
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	h := &harness{t: t, model: llmtest.NewScripted(), clock: turntest.NewClock(), keys: map[string]chat.Identity{}}
	h.model.ProviderName, h.model.ModelName = "scripted", "test-model"
	h.model.Usage = llm.Usage{InputTokens: 1000, OutputTokens: 50}
	seq := &sequence{}
	h.tenant = cfg.Tenants[0].ID
	opts := server.Options{Now: h.clock.Now, NewID: seq.Next, Getenv: getenv}
	if withModel {
		opts.Model = h.model
	}
	kinds, board := servertest.WatchBoard(server.Builtin())
	a, err := server.Build(cfg, kinds, opts)
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	h.app, h.board = a, board
	for _, k := range a.Keys {
		h.keys[k.Token] = k.Identity
	}
	return h
}

func TestGolden(t *testing.T) {
	runGolden(t, "testdata", filepath.Join("testdata", "config.yaml"), testEnv)
}

// TestExampleTaskbot runs the example's transcripts on its own
// configuration, so the example stays true.
func TestExampleTaskbot(t *testing.T) {
	dir := filepath.Join("..", "examples", "taskbot")
	runGolden(t, filepath.Join(dir, "testdata"), filepath.Join(dir, "config.yaml"), testEnv)
}

// TestExampleInterviewer runs the interviewer example's flow on its own
// configuration (its model replaced by the script).
func TestExampleInterviewer(t *testing.T) {
	dir := filepath.Join("..", "examples", "interviewer")
	runGolden(t, filepath.Join(dir, "testdata"), filepath.Join(dir, "arbiter.yaml"), map[string]string{"OPENAI_API_KEY": "sk-example"})
}

func runGolden(t *testing.T, dir, configPath string, env map[string]string) {
	defaultCfg, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	turntest.Transcripts(t, dir, *update, func(t *testing.T, ar *txtar.Archive) string {
		cfg, ok := turntest.Section(ar, "config.yaml")
		if !ok {
			cfg = defaultCfg
		}
		_, noModel := turntest.Section(ar, "no-model")
		script, _ := turntest.Section(ar, "script")
		h := newHarness(t, cfg, !noModel, env)
		h.run(string(script))
		return h.out.String()
	})
}

func (h *harness) run(script string) {
	turntest.Script(h.t, script, map[string]turntest.Verb{
		"model": func(_, rest string) { h.model.Push(llmtest.Text(rest)) },
		// model-tools {"say": "...", "calls": [{"name": "...", "arguments": {...}}]}
		// answers in the tools protocol.
		"model-tools": h.modelTools,
		"model-fail": func(_, rest string) {
			h.model.Push(llmtest.FailKind(llm.ErrorKind(rest), "scripted failure"))
		},
		"clock": func(where, rest string) {
			d, err := time.ParseDuration(strings.TrimPrefix(rest, "+"))
			if err != nil {
				h.t.Fatalf("%s: %v", where, err)
			}
			h.clock.Advance(d)
			fmt.Fprintf(&h.out, "~ clock %s\n", rest)
		},
		"send":  h.send,
		"check": h.check,
	})
}

func (h *harness) modelTools(where, rest string) {
	var a struct {
		Say   string `json:"say"`
		Calls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(rest), &a); err != nil {
		h.t.Fatalf("%s: %v", where, err)
	}
	var calls []llm.ToolCall
	for _, c := range a.Calls {
		h.calls++ // ids unique across the conversation, as a provider's are
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("call_%d", h.calls), Name: c.Name, Arguments: c.Arguments})
	}
	h.model.Push(llmtest.ToolCalls(a.Say, calls...))
}

// parseArgs reads a positional word and the key=value pairs after it.
func parseArgs(where string, t *testing.T, s string) (string, map[string]string) {
	first, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
	return first, turntest.Args(t, where, rest)
}

func (h *harness) send(where, rest string) {
	token, kv := parseArgs(where, h.t, rest)
	id, ok := h.keys[token]
	if !ok {
		h.t.Fatalf("%s: no key %q in the test config", where, token)
	}
	conv := kv["conv"]
	if conv == "" {
		conv = "c1"
	}
	button := strings.ReplaceAll(kv["button"], "$pending", h.pendingID())
	in := chat.Inbound{Identity: id, Chat: conv, MessageID: kv["msg"], Text: kv["text"], Button: button, Channel: "test"}
	if v, ok := kv["received"]; ok {
		// When the channel accepted the message, relative to the clock.
		d, err := time.ParseDuration(v)
		if err != nil {
			h.t.Fatalf("%s: received=%s: %v", where, v, err)
		}
		in.ReceivedAt = h.clock.Now().Add(d)
	}
	if name, ok := kv["call"]; ok {
		in.Call = &chat.Call{Tool: name, Args: json.RawMessage(kv["args"])}
	}
	for _, kind := range []string{"forward", "attachment", "quote"} {
		if v, ok := kv[kind]; ok {
			in.Evidence = append(in.Evidence, chat.Evidence{Kind: kind, Text: v, Source: kv["source"]})
		}
	}
	// pdf="line|line" name=a.pdf attaches a PDF with that text; image=a.png a picture.
	if lines, ok := kv["pdf"]; ok {
		in.Evidence = append(in.Evidence, chat.Evidence{Kind: chat.EvidenceAttachment, Text: kv["name"], Source: kv["name"],
			MediaType: "application/pdf", Data: mediatest.PDF(strings.Split(lines, "|")...)})
	}
	if name, ok := kv["image"]; ok {
		in.Evidence = append(in.Evidence, chat.Evidence{Kind: chat.EvidenceAttachment, Text: name, Source: name, MediaType: "image/png", Data: mediatest.PNG()})
	}
	fmt.Fprintf(&h.out, "> %s [%s]", token, conv)
	if in.MessageID != "" {
		fmt.Fprintf(&h.out, " msg=%s", in.MessageID)
	}
	if button != "" {
		fmt.Fprintf(&h.out, " button=%s", button)
	}
	for _, ev := range in.Evidence {
		fmt.Fprintf(&h.out, " %s=%q", ev.Kind, ev.Text)
		if len(ev.Data) > 0 {
			fmt.Fprintf(&h.out, " (%s, %d bytes)", ev.MediaType, len(ev.Data))
		}
	}
	if in.Call != nil {
		fmt.Fprintf(&h.out, " call=%s %s", in.Call.Tool, in.Call.Args)
	}
	fmt.Fprintf(&h.out, ": %s\n", in.Text)
	before := h.model.Calls()
	out, err := h.app.Engine.HandleTurn(context.Background(), in)
	if err != nil {
		fmt.Fprintf(&h.out, "< error: %v\n", err)
		return
	}
	h.last, h.lastKey = out, in.Key()
	for _, b := range out.Buttons {
		if id, ok := strings.CutPrefix(b.Value, "confirm:"); ok {
			h.pending = id
		}
	}
	for i, l := range strings.Split(out.Say, "\n") {
		if i == 0 {
			fmt.Fprintf(&h.out, "< say: %s\n", l)
		} else {
			fmt.Fprintf(&h.out, "<      %s\n", l)
		}
	}
	if len(out.Buttons) > 0 {
		var bs []string
		for _, b := range out.Buttons {
			bs = append(bs, fmt.Sprintf("[%s → %s]", b.Label, b.Value))
		}
		fmt.Fprintf(&h.out, "< buttons: %s\n", strings.Join(bs, " "))
	}
	if out.Pending != nil {
		fmt.Fprintf(&h.out, "< pending: %s %s\n", out.Pending.Tool, out.Pending.Args)
	}
	if out.Final != nil {
		score := "none"
		if out.Final.ConfidenceScore != nil {
			score = strconv.FormatFloat(*out.Final.ConfidenceScore, 'g', -1, 64)
		}
		fmt.Fprintf(&h.out, "< final: confidence_score=%s\n", score)
	}
	for _, ex := range out.Executed {
		fmt.Fprintf(&h.out, "< executed: %s %s %s -> %s\n", ex.Tool, ex.Args, ex.Status, ex.Result)
	}
	if out.Duplicate {
		fmt.Fprintf(&h.out, "< duplicate of turn %s\n", out.TurnID)
	}
	fmt.Fprintf(&h.out, "< model calls: %d\n", h.model.Calls()-before)
	tr := h.turnTrace(out.TurnID)
	if tr == nil || out.Duplicate {
		return
	}
	var parts []string
	parts = append(parts, "route="+tr.Route)
	if tr.Status != "ok" {
		parts = append(parts, "status="+tr.Status)
	}
	for _, c := range tr.LLMCalls {
		p := fmt.Sprintf("llm=%s/%s:%s", c.Operation, c.Model, c.Status)
		if c.Attempt != "first" {
			p += "(" + c.Attempt + ")"
		}
		parts = append(parts, p)
	}
	for _, v := range tr.Vetoes {
		parts = append(parts, fmt.Sprintf("veto=%s:%s:%s", v.Guard, v.Tool, v.Reason))
	}
	if tr.Confirmation != nil {
		parts = append(parts, fmt.Sprintf("confirmation=%s:%s", tr.Confirmation.Outcome, tr.Confirmation.Tool))
	}
	if tr.Repair != nil {
		parts = append(parts, fmt.Sprintf("repair=%v", tr.Repair.Repaired))
	}
	fmt.Fprintf(&h.out, "< journal: %s\n", strings.Join(parts, " "))
}

// traceView is the part of the journaled trace the transcripts show.
type traceView struct {
	Route    string          `json:"route"`
	Status   string          `json:"status"`
	LLMCalls []store.LLMCall `json:"llm_calls"`
	Vetoes   []struct {
		Guard, Tool, Reason string
	} `json:"vetoes"`
	Confirmation *struct {
		Outcome, Tool string
	} `json:"confirmation"`
	Repair *struct {
		Repaired bool `json:"repaired"`
	} `json:"repair"`
	PromptMessages    int     `json:"prompt_messages"`
	StablePrefixRatio float64 `json:"stable_prefix_ratio"`
}

func (h *harness) turnTrace(id string) *traceView {
	rec, err := h.app.Journal.GetTurn(context.Background(), h.lastKey.Tenant, id)
	if err != nil {
		h.t.Fatalf("journal has no turn %s: %v", id, err)
	}
	var tv traceView
	if err := json.Unmarshal(rec.Trace, &tv); err != nil {
		h.t.Fatal(err)
	}
	return &tv
}

func (h *harness) pendingID() string {
	if h.pending == "" {
		return "none"
	}
	return h.pending
}

// check asserts one fact about the state after the last turn.
func (h *harness) check(where, rest string) {
	t := h.t
	what, arg, _ := strings.Cut(rest, " ")
	arg = strings.TrimSpace(arg)
	unq := func() string {
		if s, err := strconv.Unquote(arg); err == nil {
			return s
		}
		return arg
	}
	lastPrompt := func() []llm.Message {
		reqs := h.model.Requests()
		if len(reqs) == 0 {
			t.Fatalf("%s: no model request yet", where)
		}
		return reqs[len(reqs)-1].Messages
	}
	atoi := func() int {
		n, err := strconv.Atoi(arg)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return n
	}
	ctx := context.Background()
	switch what {
	case "cards":
		tenant := h.tenant
		if n, tn, ok := strings.Cut(arg, " tenant="); ok {
			arg, tenant = n, tn
		}
		cards, err := h.board.Board().Cards(ctx, tenant)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if len(cards) != atoi() {
			t.Errorf("%s: %d cards on the board: %+v", where, len(cards), cards)
		}
	case "model-calls":
		if h.model.Calls() != atoi() {
			t.Errorf("%s: the model was called %d times", where, h.model.Calls())
		}
	case "pending":
		p, err := h.app.State.GetPending(ctx, h.lastKey)
		switch {
		case arg == "none" && errors.Is(err, store.ErrNotFound):
		case arg == "none":
			t.Errorf("%s: pending action %s still stored (err %v)", where, p.Tool, err)
		case err != nil:
			t.Errorf("%s: no pending action: %v", where, err)
		case p.Tool != arg:
			t.Errorf("%s: pending tool is %s", where, p.Tool)
		}
	case "prompt-history":
		n := 0
		for _, m := range lastPrompt() {
			if m.Role != llm.RoleSystem && !strings.HasPrefix(m.Content, "<live_context>") {
				n++
			}
		}
		if n != atoi() {
			t.Errorf("%s: last prompt had %d conversation messages", where, n)
		}
	case "request-has-tools":
		reqs := h.model.Requests()
		if len(reqs) == 0 || len(reqs[len(reqs)-1].Tools) == 0 {
			t.Errorf("%s: the last request offered no native tools", where)
		}
	case "prompt-has", "prompt-lacks":
		var all strings.Builder
		for _, m := range lastPrompt() {
			all.WriteString(m.Content + "\n")
		}
		has := strings.Contains(all.String(), unq())
		if has != (what == "prompt-has") {
			t.Errorf("%s: prompt contains %q = %v; prompt:\n%s", where, unq(), has, all.String())
		}
	case "prompt-images":
		n := 0
		for _, m := range lastPrompt() {
			n += len(m.Images)
		}
		if n != atoi() {
			t.Errorf("%s: the last prompt shows %d images", where, n)
		}
	case "say-has":
		if !strings.Contains(h.last.Say, unq()) {
			t.Errorf("%s: reply %q lacks %q", where, h.last.Say, unq())
		}
	case "say-lacks":
		if strings.Contains(h.last.Say, unq()) || strings.Contains(fmt.Sprint(h.last.Buttons), unq()) {
			t.Errorf("%s: reply %q shows %q", where, h.last.Say, unq())
		}
	case "executed":
		if len(h.last.Executed) != atoi() {
			t.Errorf("%s: %d executions in the last reply", where, len(h.last.Executed))
		}
	case "card":
		// check card "title" assignee=... column=... status=...
		q, err := strconv.QuotedPrefix(arg)
		if err != nil {
			t.Fatalf("%s: card title must be quoted: %v", where, err)
		}
		title, _ := strconv.Unquote(q)
		_, kv := parseArgs(where, t, "card "+arg[len(q):])
		cards, _ := h.board.Board().Cards(ctx, h.tenant)
		found := false
		for _, c := range cards {
			if c.Title != title {
				continue
			}
			found = true
			got := map[string]string{"assignee": c.AssigneeID, "column": c.Column, "status": string(c.Status), "due": c.Due}
			if c.Attachment != nil {
				got["attachment"] = c.Attachment.File + c.Attachment.URL
			}
			keys := make([]string, 0, len(kv))
			for k := range kv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if got[k] != kv[k] {
					t.Errorf("%s: card %q %s = %q, want %q", where, title, k, got[k], kv[k])
				}
			}
		}
		if !found {
			t.Errorf("%s: no card titled %q", where, title)
		}
	case "stable-prefix":
		// check stable-prefix >= 0.8 | < 0.8: the share of the last prompt
		// that repeats the previous prompt from its start.
		op, val, _ := strings.Cut(arg, " ")
		want, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		got := h.turnTrace(h.last.TurnID).StablePrefixRatio
		if (op == ">=" && got < want) || (op == "<" && got >= want) {
			t.Errorf("%s: stable prefix ratio %.3f", where, got)
		}
	case "script-empty":
		if h.model.Remaining() != 0 {
			t.Errorf("%s: %d scripted model replies were not used", where, h.model.Remaining())
		}
	default:
		t.Fatalf("%s: unknown check %q", where, what)
	}
}
