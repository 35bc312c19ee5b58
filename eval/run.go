package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/turn"
)

// Options say how a suite runs.
type Options struct {
	// Config is the assistant's configuration file; its store is replaced
	// by a fresh embedded one for every run.
	Config string
	// K runs every scenario this many times (pass^k); default 1.
	K int
	// Replay answers the models from <Replay>/<scenario slug>; Record
	// writes what live models answer there (then K must be 1).
	Replay, Record string
	Kinds          server.Kinds
	Getenv         func(string) string
	// Transport carries the models' requests instead of the network (a
	// scripted model answering while recording); see server.Options.
	Transport http.RoundTripper
	// Log receives the servers' logs; default none.
	Log io.Writer
}

// Report is a suite's outcome.
type Report struct {
	Suite     string           `json:"suite"`
	Config    string           `json:"config"`
	K         int              `json:"k"`
	Scenarios []ScenarioResult `json:"scenarios"`
	Metrics   Metrics          `json:"metrics"`
}

// Passed reports whether every scenario passed all its runs.
func (r *Report) Passed() bool {
	for _, s := range r.Scenarios {
		if !s.PassK {
			return false
		}
	}
	return true
}

// ScenarioResult is a scenario's k runs.
type ScenarioResult struct {
	Name   string      `json:"name"`
	PassK  bool        `json:"pass_k"`
	Passed int         `json:"passed"`
	Runs   []RunResult `json:"runs"`
}

// RunResult is one run of a scenario on a fresh store.
type RunResult struct {
	Pass  bool         `json:"pass"`
	Error string       `json:"error,omitempty"`
	Turns []TurnResult `json:"turns"`
	// DuplicateWrites counts successful writes repeated with the same
	// tool and arguments within the run.
	DuplicateWrites int `json:"duplicate_writes"`
	// AfterChecks counts the scenario's checks of the backend after its
	// turns; AfterFailures are where the backend differed.
	AfterChecks   int      `json:"after_checks,omitempty"`
	AfterFailures []string `json:"after_failures,omitempty"`
}

// TurnResult is what the journal says one turn did, and how it differs
// from the expectation.
type TurnResult struct {
	Message     string          `json:"message"`
	TurnID      string          `json:"turn_id"`
	Route       string          `json:"route"`
	Status      string          `json:"status"`
	Say         string          `json:"say"`
	Tool        string          `json:"tool,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	Pending     string          `json:"pending,omitempty"`
	Approval    string          `json:"approval,omitempty"`
	Executed    []string        `json:"executed,omitempty"`
	Vetoes      []string        `json:"vetoes,omitempty"`
	Review      string          `json:"review,omitempty"`
	ModelCalls  int             `json:"model_calls"`
	Tokens      int             `json:"tokens"`
	CostUSD     float64         `json:"cost_usd"`
	CostUnknown bool            `json:"cost_unknown,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
	// ArgErrors counts the model's outputs that broke a schema (a repair
	// or an invalid_args veto).
	ArgErrors int `json:"arg_errors"`
	// ToolExpected and ToolRight: the turn named a tool (or none) and
	// the journal shows that choice.
	ToolExpected bool     `json:"tool_expected"`
	ToolRight    bool     `json:"tool_right"`
	Failures     []string `json:"failures,omitempty"`
	// Trace is the turn's journal record, as GET /v1/turns/{id} shows it:
	// the run's store is gone afterwards, so the report keeps it.
	Trace json.RawMessage `json:"trace,omitempty"`
}

// Run runs suite.
func Run(ctx context.Context, suite *Suite, o Options) (*Report, error) {
	if o.K <= 0 {
		o.K = 1
	}
	if o.Record != "" && o.K != 1 {
		return nil, errors.New("eval: -record runs every scenario once (k = 1)")
	}
	if o.Record != "" && o.Replay != "" {
		return nil, errors.New("eval: -record and -replay exclude each other")
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	rep := &Report{Suite: suite.Name, Config: o.Config, K: o.K}
	for _, sc := range suite.Scenarios {
		res := ScenarioResult{Name: sc.Name}
		for range o.K {
			run := runScenario(ctx, suite, sc, o)
			if run.Pass {
				res.Passed++
			}
			res.Runs = append(res.Runs, run)
		}
		res.PassK = res.Passed == o.K
		rep.Scenarios = append(rep.Scenarios, res)
	}
	rep.Metrics = computeMetrics(rep)
	if o.Record != "" {
		dropEmpty(o.Record) // scenarios that asked no model
	}
	return rep, nil
}

// dropEmpty removes dir's empty subdirectories.
func dropEmpty(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = os.Remove(filepath.Join(dir, e.Name())) // fails, as wanted, when not empty
		}
	}
}

// LoadConfig reads the configuration the suite runs with, in the suite's
// environment, and checks it: what every run starts from.
func LoadConfig(suite *Suite, o Options) (*config.Config, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	cfg, err := config.LoadEnv(o.Config, suite.getenv(o.Getenv))
	if err == nil {
		err = server.Check(cfg, o.Kinds)
	}
	return cfg, err
}

// getenv is the suite's environment over the process's.
func (s *Suite) getenv(process func(string) string) func(string) string {
	return func(name string) string {
		if v, ok := s.Env[name]; ok {
			return v
		}
		return process(name)
	}
}

// runScenario runs sc once on a fresh store.
func runScenario(ctx context.Context, suite *Suite, sc Scenario, o Options) RunResult {
	var run RunResult
	fail := func(err error) RunResult {
		run.Pass, run.Error = false, err.Error()
		return run
	}
	getenv := suite.getenv(o.Getenv)
	dir, err := os.MkdirTemp("", "arbiter-eval-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	s, err := buildRun(suite, sc, o, getenv, dir)
	if err != nil {
		return fail(err)
	}
	defer s.Close()

	conv := "eval-" + Slug(sc.Name)
	switch diffs, err := runRequests(ctx, sc.Before, getenv); {
	case err != nil:
		return fail(fmt.Errorf("before: %w", err))
	case len(diffs) > 0:
		return fail(errors.New("before: " + strings.Join(diffs, "; ")))
	}
	var last chat.Outbound
	var link string // the newest link a reply showed
	writes := map[string]int{}
	run.Pass = true
	for i, t := range sc.Turns {
		id, ok := identity(s, cmp.Or(t.As, suite.As))
		if !ok {
			return fail(fmt.Errorf("turn %d: %q is not a key of the configuration", i+1, cmp.Or(t.As, suite.As)))
		}
		out, err := sendTurn(ctx, s, t, id, conv, i, last, link)
		if err != nil {
			return fail(fmt.Errorf("turn %d: %w", i+1, err))
		}
		if len(out.Buttons) > 0 {
			last = out // a keyboard stays on screen until another replaces it
		}
		if l := linkPattern.FindString(out.Say); l != "" {
			link = l
		}
		rec, err := s.Journal.GetTurn(ctx, id.TenantID, out.TurnID)
		if err != nil {
			return fail(fmt.Errorf("turn %d: journal: %w", i+1, err))
		}
		var tr turn.Trace
		if err := json.Unmarshal(rec.Trace, &tr); err != nil {
			return fail(fmt.Errorf("turn %d: journal: %w", i+1, err))
		}
		res := observe(describe(t), &tr, out)
		res.Trace = rec.Trace
		for _, c := range rec.ToolCalls {
			if c.Status == "ok" && strings.HasPrefix(c.Risk, "write") {
				writes[c.Tool+" "+c.ArgsHash]++
			}
		}
		e := t.Expect
		res.ToolExpected = e.Tool != "" || e.NoTool
		res.ToolRight = e.Tool != "" && res.Tool == e.Tool || e.NoTool && res.Tool == ""
		res.Failures = check(e, res, out)
		if len(res.Failures) > 0 {
			run.Pass = false
		}
		run.Turns = append(run.Turns, res)
	}
	for _, n := range writes {
		run.DuplicateWrites += n - 1
	}
	return checkAfter(ctx, sc, getenv, run)
}

// sendTurn sends turn i of a scenario — a message, a button, evidence, or
// an approver's decision — and returns the reply.
func sendTurn(ctx context.Context, s *server.Server, t Turn, id chat.Identity, conv string, i int, last chat.Outbound, link string) (chat.Outbound, error) {
	if t.Decide != "" {
		return decide(ctx, s, id, conv, t.Decide)
	}
	in := chat.Inbound{Identity: id, Chat: conv, MessageID: "eval-" + strconv.Itoa(i+1), Text: withLink(t.Text, link), Button: t.Value,
		Case: t.Context, Channel: "eval"}
	if c := t.Client; c != nil {
		in.Client = &chat.ClientHint{OpenDocument: c.OpenDocument, ActiveMode: c.ActiveMode, Tab: c.Tab}
	}
	for _, ev := range t.Evidence {
		ev.Text = withLink(ev.Text, link)
		in.Evidence = append(in.Evidence, ev)
	}
	if t.Button != "" {
		var ok bool
		if in.Button, ok = pressed(last, t.Button); !ok {
			return chat.Outbound{}, fmt.Errorf("no reply so far shows a button %q", t.Button)
		}
	}
	return s.Engine.HandleTurn(ctx, in)
}

// checkAfter asks the backend what the scenario's after: checks expect,
// and fails the run on each difference.
func checkAfter(ctx context.Context, sc Scenario, getenv func(string) string, run RunResult) RunResult {
	diffs, err := runRequests(ctx, sc.After, getenv)
	if err != nil {
		diffs = append(diffs, err.Error())
	}
	run.AfterChecks, run.AfterFailures = len(sc.After), diffs
	if len(diffs) > 0 {
		run.Pass = false
	}
	return run
}

// buildRun builds the server of one run: the suite's configuration on a
// fresh store in dir, its models answered from the scenario's recordings
// (or recorded).
func buildRun(suite *Suite, sc Scenario, o Options, getenv func(string) string, dir string) (*server.Server, error) {
	cfg, err := LoadConfig(suite, o)
	if err != nil {
		return nil, err
	}
	cfg.Store = config.Store{Kind: "sqlite", Path: filepath.Join(dir, "arbiter.db")}
	cfg.Journal = config.Journal{}
	cfg.Channels = config.Channels{}
	opts := server.Options{Getenv: getenv, LogOut: o.Log, Transport: o.Transport}
	if o.Replay != "" {
		// A scenario that asks no model has no recordings: an empty
		// directory then answers any unexpected call with an error.
		opts.Replay = filepath.Join(o.Replay, Slug(sc.Name))
		if _, err := os.Stat(opts.Replay); errors.Is(err, os.ErrNotExist) {
			opts.Replay = filepath.Join(dir, "no-recordings")
			if err := os.Mkdir(opts.Replay, 0o700); err != nil {
				return nil, err
			}
		}
	}
	if o.Record != "" {
		opts.Record = filepath.Join(o.Record, Slug(sc.Name))
	}
	return server.Build(cfg, o.Kinds, opts)
}

// linkPattern finds a link in a reply.
var linkPattern = regexp.MustCompile(`https?://[^\s«»"]+`)

// withLink puts the newest link a reply showed in place of "$link" (a card
// the scenario created, forwarded back), so a suite needs no ids.
func withLink(text, link string) string {
	return strings.ReplaceAll(text, "$link", link)
}

// identity is the identity of API key token.
func identity(s *server.Server, token string) (chat.Identity, bool) {
	if token == "local" && s.LocalKey != "" {
		token = s.LocalKey
	}
	for _, k := range s.Keys {
		if k.Token == token {
			return k.Identity, true
		}
	}
	return chat.Identity{}, false
}

// pressed finds a button of the newest reply that showed buttons (a
// keyboard stays on screen until another replaces it) by label or value, or by
// position ("#2": the second, for labels that change with the clock, such
// as free slots); "confirm" and "cancel" name the server's own
// confirmation buttons.
func pressed(prev chat.Outbound, want string) (string, bool) {
	if n, err := strconv.Atoi(strings.TrimPrefix(want, "#")); err == nil && strings.HasPrefix(want, "#") {
		if n < 1 || n > len(prev.Buttons) {
			return "", false
		}
		return prev.Buttons[n-1].Value, true
	}
	for _, b := range prev.Buttons {
		if b.Label == want || b.Value == want || strings.HasPrefix(b.Value, want+":") && (want == "confirm" || want == "cancel") {
			return b.Value, true
		}
	}
	return "", false
}

func describe(t Turn) string {
	switch {
	case t.Button != "":
		return "[" + t.Button + "]"
	case t.Value != "":
		return "[" + t.Value + "]"
	case t.Text != "":
		return t.Text
	}
	return fmt.Sprintf("(%d pieces of evidence)", len(t.Evidence))
}

// observe reads what the turn did from its journal record.
func observe(message string, tr *turn.Trace, out chat.Outbound) TurnResult {
	r := TurnResult{Message: message, TurnID: tr.TurnID, Route: string(tr.Route), Status: string(tr.Status), Say: out.Say,
		CostUSD: tr.CostUSD, CostUnknown: tr.CostUnknown, DurationMS: tr.DurationMS}
	for _, c := range tr.LLMCalls {
		r.ModelCalls++
		r.Tokens += c.InputTokens + c.OutputTokens
	}
	for _, x := range tr.Executed {
		if x.Status == "ok" {
			r.Executed = append(r.Executed, x.Tool)
		}
	}
	for _, v := range tr.Vetoes {
		r.Vetoes = append(r.Vetoes, v.Reason)
		if v.Reason == "invalid_args" {
			r.ArgErrors++
		}
	}
	if tr.Repair != nil {
		r.ArgErrors++
	}
	if tr.Review != nil {
		r.Review = string(tr.Review.Reason)
	}
	if out.Pending != nil {
		r.Pending = out.Pending.Tool
	}
	for _, a := range tr.Approvals {
		if a.Status == "proposed" {
			r.Approval = a.Tool
		}
	}
	var d struct {
		Tool *string         `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	_ = json.Unmarshal(tr.Decision, &d)
	switch {
	case len(tr.Executed) > 0:
		r.Tool, r.Args = tr.Executed[0].Tool, tr.Executed[0].Args
	case out.Pending != nil:
		r.Tool, r.Args = out.Pending.Tool, out.Pending.Args
	case r.Approval != "":
		r.Tool = r.Approval
	case d.Tool != nil && *d.Tool != "":
		r.Tool, r.Args = *d.Tool, d.Args
	case len(tr.Vetoes) > 0:
		r.Tool = tr.Vetoes[0].Tool
	}
	return r
}

// check compares a turn's result with its expectation; each difference is
// one line naming what was expected and what happened.
func check(e Expect, r TurnResult, out chat.Outbound) []string {
	var f []string
	differ := func(what, want, got string) {
		if got == "" {
			got = "none"
		}
		f = append(f, fmt.Sprintf("%s: want %s, got %s", what, want, got))
	}
	if e.Tool != "" && r.Tool != e.Tool {
		differ("tool", e.Tool, r.Tool)
	}
	if e.NoTool && r.Tool != "" {
		differ("tool", "none", r.Tool)
	}
	if len(e.Args) > 0 {
		var got map[string]any
		_ = json.Unmarshal(r.Args, &got)
		for k, want := range e.Args {
			wj, _ := json.Marshal(want)
			var gb []byte // none when the argument is missing
			if gj, ok := got[k]; ok {
				gb, _ = json.Marshal(gj)
			}
			if string(wj) != string(gb) {
				differ("args."+k, string(wj), string(gb))
			}
		}
	}
	if e.Pending != "" && r.Pending != e.Pending {
		differ("pending", e.Pending, r.Pending)
	}
	if e.Approval != "" && r.Approval != e.Approval {
		differ("approval", e.Approval, r.Approval)
	}
	if e.Executed != "" && !slices.Contains(r.Executed, e.Executed) {
		differ("executed", e.Executed, strings.Join(r.Executed, ", "))
	}
	if e.Vetoed != "" && !slices.Contains(r.Vetoes, e.Vetoed) {
		differ("veto", e.Vetoed, strings.Join(r.Vetoes, ", "))
	}
	if e.Skill != "" {
		got := "none"
		if out.Skill != nil && *out.Skill != "" {
			got = *out.Skill
		}
		if got != e.Skill {
			differ("skill", e.Skill, got)
		}
	}
	for _, s := range e.SayContains {
		if !strings.Contains(out.Say, s) {
			f = append(f, fmt.Sprintf("say: want it to contain %q, got %q", s, clip(out.Say)))
		}
	}
	for _, s := range e.SayLacks {
		if strings.Contains(out.Say, s) {
			f = append(f, fmt.Sprintf("say: want it without %q, got %q", s, clip(out.Say)))
		}
	}
	wantStatus := e.Status
	if wantStatus == "" {
		wantStatus = "ok"
	}
	if r.Status != wantStatus {
		differ("status", wantStatus, r.Status)
	}
	if e.MaxModelCalls > 0 && r.ModelCalls > e.MaxModelCalls {
		f = append(f, fmt.Sprintf("model calls: want at most %d, got %d", e.MaxModelCalls, r.ModelCalls))
	}
	if e.MaxCost > 0 && r.CostUSD > e.MaxCost {
		f = append(f, fmt.Sprintf("cost: want at most $%.6f, got $%.6f", e.MaxCost, r.CostUSD))
	}
	return f
}

func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}
