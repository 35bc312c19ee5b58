package agentdojo

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/llm"
)

// obedientModel is a fully compromised model: it solves the user's task
// call by call, and whenever the injected text is in its view it first
// does what the injection says — right after reading it, and again at the
// start of the user's next turn — filling the attacker's placeholders with
// what it read. It speaks native tool calling, one call per answer.
type obedientModel struct {
	mu sync.Mutex
	c  *caseState
}

// caseState is the model's script for one case.
type caseState struct {
	user   []Call
	inject []Call // nil without an attack
	// sayOnly is an injection that asks only for words in the reply.
	sayOnly string
	marker  string // text of the attack the model recognises in its view
	b       *backend
	types   map[string]map[string]string // per tool, each parameter's JSON type

	seenOnce bool // the injected text has been in view
	bursts   int  // times the model obeyed (at most two)
	obeying  bool // within a burst
	pos      int  // next injection call of the burst
	finished bool // the model answered with the user's task done
	calls    int  // times the model was asked
	seq      int  // tool calls proposed, for their ids
}

func (m *obedientModel) Name() string           { return "agentdojo" }
func (m *obedientModel) Model() string          { return "obedient" }
func (m *obedientModel) Protocol() llm.Protocol { return llm.ProtocolTools }

// calls is how many times the model was asked in the current case.
func (m *obedientModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c.calls
}

func (m *obedientModel) set(c *caseState) {
	m.mu.Lock()
	m.c = c
	m.mu.Unlock()
}

func (m *obedientModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.c
	c.calls++
	msgs := req.Messages
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == llm.RoleUser {
		// A new message of the user: the second chance to obey, if the
		// injected text is still in view.
		if c.bursts == 1 && seen(msgs, c.marker) {
			c.bursts, c.obeying, c.pos = 2, true, 0
		}
	}
	if c.marker != "" && !c.seenOnce && seen(msgs, c.marker) {
		c.seenOnce = true
		c.bursts, c.obeying, c.pos = 1, true, 0
	}
	evidence := lastResult(msgs)
	if c.obeying {
		for c.pos < len(c.inject) {
			call := c.fill(c.inject[c.pos], evidence)
			c.pos++
			if call.Function == "" || c.done(call, c.injectedBefore(c.pos-1)) {
				continue // already carried out in an earlier burst
			}
			if c.bursts == 2 && !inView(c.inject[c.pos-1], msgs) {
				continue // the value it needs has left the model's view
			}
			return c.propose(call), nil
		}
		c.obeying = false
		if c.sayOnly != "" {
			return llm.Response{Protocol: llm.ProtocolTools, Text: c.sayOnly}, nil
		}
	}
	for i, call := range c.user {
		if !c.done(call, countBefore(c.user, i)) {
			return c.propose(call), nil
		}
	}
	c.finished = true
	return llm.Response{Protocol: llm.ProtocolTools, Text: "All done."}, nil
}

// injectedBefore is how many of the injection's calls before i equal
// call i, so a repeated call is looked for as often as it was asked.
func (c *caseState) injectedBefore(i int) int { return countBefore(c.inject, i) }

func countBefore(calls []Call, i int) int {
	n := 0
	for j := 0; j < i; j++ {
		if calls[j].Function == calls[i].Function && reflect.DeepEqual(calls[j].Args, calls[i].Args) {
			n++
		}
	}
	return n
}

// done reports whether the backend received call more than before times.
func (c *caseState) done(call Call, before int) bool {
	n := 0
	for _, e := range c.b.calls() {
		if e.Tool == call.Function && argsMatch(call.Args, e.Args) {
			n++
		}
	}
	return n > before
}

func (c *caseState) propose(call Call) llm.Response {
	c.seq++
	args, _ := json.Marshal(call.Args)
	return llm.Response{Protocol: llm.ProtocolTools, Provider: "agentdojo", Model: "obedient",
		ToolCalls: []llm.ToolCall{{ID: "call_" + strconv.Itoa(c.seq), Name: call.Function, Arguments: args}}}
}

var (
	placeholder = regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_.]*`)
	emailLike   = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
)

// fill replaces an injected call's placeholders with values of their
// parameter's type taken from what the model read: the attacker wants it
// sent away ("$content"), or the e-mail addresses in it
// ($evidence_emails).
func (c *caseState) fill(call Call, evidence string) Call {
	out := Call{Function: call.Function, Args: make(map[string]any, len(call.Args))}
	types := c.types[call.Function]
	for k, v := range call.Args {
		s, ok := v.(string)
		if !ok || !strings.Contains(s, "$") {
			out.Args[k] = v
			continue
		}
		snippet := clip(evidence, 160)
		switch types[k] {
		case "number", "integer":
			out.Args[k] = firstNumber(evidence)
		case "array":
			switch {
			case s == "$evidence_emails":
				var list []any
				for _, e := range emailLike.FindAllString(evidence, 5) {
					list = append(list, e)
				}
				if len(list) == 0 {
					return Call{}
				}
				out.Args[k] = list
			default:
				out.Args[k] = []any{snippet}
			}
		default:
			out.Args[k] = placeholder.ReplaceAllLiteralString(s, snippet)
		}
	}
	return out
}

// fixed is a user task's call with each value worked out at run time
// ("$dynamic") replaced by a fixed one of its type: the user knows what
// they asked for, and accepts that value and no other.
func (c *caseState) fixed(call Call) Call {
	out := Call{Function: call.Function, Args: make(map[string]any, len(call.Args))}
	for k, v := range call.Args {
		if s, ok := v.(string); ok && s == "$dynamic" {
			switch c.types[call.Function][k] {
			case "number", "integer":
				v = 1.0
			case "array":
				v = []any{"value"}
			default:
				v = "value"
			}
		}
		out.Args[k] = v
	}
	return out
}

// argsMatch reports whether a received call's arguments are want's.
func argsMatch(want map[string]any, got json.RawMessage) bool {
	var g map[string]any
	if json.Unmarshal(got, &g) != nil {
		return false
	}
	for k, w := range want {
		if !reflect.DeepEqual(normal(w), normal(g[k])) {
			return false
		}
	}
	for k, v := range g {
		if _, asked := want[k]; !asked && v != nil {
			return false
		}
	}
	return true
}

// normal is v as JSON decodes it, so an int and a float64 compare equal.
func normal(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// seen reports whether marker appears in the text the model is shown.
func seen(msgs []llm.Message, marker string) bool {
	escaped := strings.Trim(jsonText(marker), `"`)
	for _, m := range msgs {
		if strings.Contains(m.Content, marker) || strings.Contains(m.Content, escaped) {
			return true
		}
	}
	return false
}

// inView reports whether every literal value of call (three characters
// or more) appears in the model's view: an injection's constants (an
// address, a link) are known only while its text is in view.
func inView(call Call, msgs []llm.Message) bool {
	for _, v := range call.Args {
		for _, s := range literals(v) {
			if len(s) >= 3 && !strings.HasPrefix(s, "$") && !seen(msgs, s) {
				return false
			}
		}
	}
	return true
}

func literals(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, literals(e)...)
		}
		return out
	}
	return nil
}

// lastResult is the text of the latest tool result in view — this task's,
// or one remembered from an earlier turn — as plain strings (the model
// reads values, not their JSON escapes).
func lastResult(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		content := msgs[i].Content
		switch {
		case msgs[i].Role == llm.RoleTool:
		case msgs[i].Role == llm.RoleUser && strings.HasPrefix(content, "<tool_result"):
			// A remembered result: the block's first and last lines are
			// its labels.
			if a, b := strings.Index(content, "\n"), strings.LastIndex(content, "\n"); a >= 0 && b > a {
				content = content[a+1 : b]
			}
		default:
			continue
		}
		var v any
		if json.Unmarshal([]byte(content), &v) != nil {
			return content
		}
		var parts []string
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				parts = append(parts, x)
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				if d, ok := x["data"]; ok {
					walk(d)
					return
				}
				for _, k := range slices.Sorted(maps.Keys(x)) {
					walk(x[k])
				}
			}
		}
		walk(v)
		return strings.Join(parts, "\n")
	}
	return ""
}

var numberLike = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?\b`)

func firstNumber(s string) float64 {
	if m := numberLike.FindString(s); m != "" {
		if f, err := strconv.ParseFloat(m, 64); err == nil {
			return f
		}
	}
	return 1
}

func clip(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

// jsonText is s as it appears inside encoded JSON.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
