package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store/storetest"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

var update = flag.Bool("update", false, "rewrite the want sections of the transcripts")

// The transcripts in testdata run this configuration over the HTTP API
// with a fake model scripted per transcript: "router …" lines are what the
// router model answers, "answer …" lines what the answering model writes.

// fakeModel answers the router's calls and the answer's from two queues.
type fakeModel struct {
	mu      sync.Mutex
	routes  []string // JSON: {"calls":[…]}, {"text":…}, {"status":500}, {"delay":"1s"}
	answers []string
	counts  map[string]int
}

func (f *fakeModel) respond(r *llmtest.ChatRequest) llmtest.HTTPReply {
	f.mu.Lock()
	defer f.mu.Unlock()
	answering := false
	for _, t := range r.Tools {
		answering = answering || t.Function.Name == "respond"
	}
	if answering {
		f.counts["turn"]++
		if len(f.answers) == 0 {
			return llmtest.HTTPReply{Status: 500, ErrorMessage: "no scripted answer"}
		}
		text := f.answers[0]
		f.answers = f.answers[1:]
		args, _ := json.Marshal(map[string]string{"text": text})
		return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "respond", Arguments: string(args)}}}
	}
	f.counts["route"]++
	if len(f.routes) == 0 {
		return llmtest.HTTPReply{Content: "no tool needed"}
	}
	var step struct {
		Calls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Raw       string          `json:"raw"`
		} `json:"calls"`
		Text   string `json:"text"`
		Status int    `json:"status"`
		Delay  string `json:"delay"`
	}
	_ = json.Unmarshal([]byte(f.routes[0]), &step)
	f.routes = f.routes[1:]
	reply := llmtest.HTTPReply{Content: step.Text, Status: step.Status}
	if step.Status != 0 {
		reply.ErrorMessage = "scripted failure"
	}
	if step.Delay != "" {
		reply.Delay, _ = time.ParseDuration(step.Delay)
		reply.Content = "late"
	}
	for _, c := range step.Calls {
		args := string(c.Arguments)
		if c.Raw != "" {
			args = c.Raw // arguments that are not JSON at all
		}
		reply.ToolCalls = append(reply.ToolCalls, llmtest.WireToolCall{Name: c.Name, Arguments: args})
	}
	if reply.Content == "" && len(reply.ToolCalls) == 0 && reply.Status == 0 {
		reply.Content = "no tool needed"
	}
	return reply
}

func TestTranscripts(t *testing.T) {
	base, err := os.ReadFile("arbiter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	turntest.Transcripts(t, "testdata", *update, func(t *testing.T, ar *txtar.Archive) string {
		script, _ := turntest.Section(ar, "script")
		return play(t, string(base), string(script))
	})
}

// play plays a script and returns its transcript.
func play(t *testing.T, yaml, script string) string {
	model := &fakeModel{counts: map[string]int{}}
	srv := llmtest.NewServer(llmtest.ServerConfig{Respond: model.respond})
	t.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test"}
	yaml = strings.Replace(yaml, "      web_search: web_search", "      timeout: 500ms\n      web_search: web_search", 1)
	store := filepath.Join(t.TempDir(), "router.db")
	// The engine and its store share a clock that stands still until a
	// "clock +48h" line moves it on.
	clock := storetest.NewClock(time.Now())
	start := func() *servertest.Server {
		cfg, err := config.Parse(strings.NewReader(yaml), func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store.Path = store
		s, err := server.Build(cfg, kinds(), server.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		e := &servertest.Server{T: t, Server: s, API: servertest.Serve(t, s), Model: srv}
		t.Cleanup(func() { s.Close() })
		return e
	}
	e := start()
	var out strings.Builder
	var last []map[string]any // the buttons of the last reply
	queue := func(q *[]string) turntest.Verb {
		return func(_, rest string) {
			model.mu.Lock()
			*q = append(*q, rest)
			model.mu.Unlock()
		}
	}
	turntest.Script(t, script, map[string]turntest.Verb{
		"router": queue(&model.routes),
		"answer": queue(&model.answers),
		"clock": func(where, rest string) {
			d, err := time.ParseDuration(strings.TrimPrefix(rest, "+"))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			clock.Advance(d)
			fmt.Fprintf(&out, "~ clock %s\n", rest)
		},
		"restart": func(string, string) {
			e.API.Close()
			e.Close()
			e = start()
			out.WriteString("~ restart\n")
		},
		"send": func(where, rest string) { last = send(t, e, model, where, rest, &out) },
		// A button of the last reply, by its label: its value carries ids
		// the script cannot know.
		"press": func(where, rest string) {
			label := turntest.Args(t, where, rest)["label"]
			value := ""
			for _, b := range last {
				if b["label"] == label {
					value, _ = b["value"].(string)
				}
			}
			if value == "" {
				t.Fatalf("%s: the last reply has no button %q", where, label)
			}
			last = send(t, e, model, where, "button="+strconv.Quote(value)+" shown="+strconv.Quote("["+label+"]"), &out)
		},
		// The button pressed last, once more (a double tap).
		"press-again": func(where, _ string) {
			last = send(t, e, model, where, "button="+strconv.Quote(pressed)+" shown="+strconv.Quote("[again]"), &out)
		},
	})
	return out.String()
}

// pressed is the value of the last button a script pressed.
var pressed string

// send posts one message and writes what came back; it returns the
// reply's buttons.
func send(t *testing.T, e *servertest.Server, model *fakeModel, where, rest string, out *strings.Builder) []map[string]any {
	kv := turntest.Args(t, where, rest)
	conv := kv["conv"]
	if conv == "" {
		conv = "c1"
	}
	body := map[string]any{"conversation_id": conv}
	if v, ok := kv["text"]; ok {
		body["text"] = v
	}
	if v, ok := kv["button"]; ok {
		body["button"], pressed = v, v
	}
	if v := kv["photo"]; v != "" {
		body["evidence"] = []map[string]string{{"kind": "attachment", "text": "photo 1280x960", "source": v, "media_type": "image/jpeg"}}
	}
	if doc, mode := kv["doc"], kv["mode"]; doc != "" || mode != "" {
		body["client"] = map[string]string{"open_document": doc, "active_mode": mode}
	}
	raw, _ := json.Marshal(body)
	model.mu.Lock()
	before := map[string]int{"route": model.counts["route"], "turn": model.counts["turn"]}
	model.mu.Unlock()
	shown := kv["button"]
	if v, ok := kv["shown"]; ok {
		shown = v
	}
	fmt.Fprintf(out, "> %s", kv["text"]+shown)
	if kv["doc"] != "" {
		fmt.Fprintf(out, "  [open: %s]", kv["doc"])
	}
	if kv["photo"] != "" {
		fmt.Fprintf(out, "  [photo: %s]", kv["photo"])
	}
	out.WriteString("\n")
	status, reply := e.Post("k-router-01", string(raw))
	if status != 200 {
		fmt.Fprintf(out, "< error %d: %v\n", status, reply)
		return nil
	}
	fmt.Fprintf(out, "< say: %s\n", reply["say"])
	skill := "none"
	if s, ok := reply["skill"].(string); ok {
		skill = s
	}
	fmt.Fprintf(out, "< skill: %s\n", skill)
	for _, x := range reply["executed"].([]any) {
		ex := x.(map[string]any)
		args, _ := json.Marshal(ex["args"])
		fmt.Fprintf(out, "< executed: %s %s %s\n", ex["tool"], args, ex["status"])
	}
	var buttons []map[string]any
	for _, b := range asList(reply["buttons"]) {
		buttons = append(buttons, b.(map[string]any))
	}
	if p, ok := reply["pending"].(map[string]any); ok {
		fmt.Fprintf(out, "< pending: %s\n", p["tool"])
	} else if len(buttons) > 0 {
		labels := make([]string, len(buttons))
		for i, b := range buttons {
			labels[i] = "[" + b["label"].(string) + "]"
		}
		fmt.Fprintf(out, "< buttons: %s\n", strings.Join(labels, " "))
	}
	_, rec := e.Do("GET", "/v1/turns/"+reply["turn_id"].(string), "k-router-01", "")
	if r, ok := rec["router"].(map[string]any); ok {
		var parts []string
		for _, k := range []string{"intercept", "web_search", "switched", "failed"} {
			if v, ok := r[k].(string); ok && v != "" {
				parts = append(parts, k+"="+strconv.Quote(v))
			}
		}
		if p, ok := r["proposed"].([]any); ok {
			for _, c := range p {
				parts = append(parts, "proposed="+strconv.Quote(c.(string)))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(out, "< router: %s\n", strings.Join(parts, " "))
		}
	}
	if vs, ok := rec["vetoes"].([]any); ok {
		for _, v := range vs {
			m := v.(map[string]any)
			fmt.Fprintf(out, "< veto: %s %s\n", m["guard"], m["tool"])
		}
	}
	model.mu.Lock()
	fmt.Fprintf(out, "< model calls: route=%d turn=%d\n", model.counts["route"]-before["route"], model.counts["turn"]-before["turn"])
	model.mu.Unlock()
	return buttons
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
