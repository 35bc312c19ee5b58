package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/funcdef"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// recordingTool stands in for a tau2 backend: it records every call it
// receives and always succeeds.
type recordingTool struct {
	spec  tool.Spec
	mu    *sync.Mutex
	calls *[]recordedCall
}

type recordedCall struct {
	Tool, Key string
	Args      json.RawMessage
}

func (r recordingTool) Spec() tool.Spec { return r.spec }

func (r recordingTool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	r.mu.Lock()
	*r.calls = append(*r.calls, recordedCall{Tool: r.spec.Name, Key: c.IdempotencyKey, Args: c.Args})
	r.mu.Unlock()
	return tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"ok":true}`)}, nil
}

// TestTau2WritesGoThroughConfirmation replays every WRITE reference action
// of tau2-bench's airline and retail tasks: a scripted model proposes it,
// nothing reaches the backend before "yes", exactly the stored call reaches
// it once after — the model, ready with other arguments for the "yes" turn,
// is not even asked — and a second "yes" adds nothing. Read actions run at
// once. In the tasks whose right outcome is no action at all (the
// refusals), the model proposes each write of the domain in turn and the
// user's "no" leaves the backend without a single write.
func TestTau2WritesGoThroughConfirmation(t *testing.T) {
	base := filepath.Join("..", "testdata", "external", "tau2")
	total, refusals := map[string]int{}, map[string]int{}
	for _, domain := range []string{"airline", "retail"} {
		var catalog struct {
			Tools []struct {
				Name       string          `json:"name"`
				Type       string          `json:"tau2_tool_type"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"tools"`
		}
		readJSON(t, filepath.Join(base, "derived", domain, "tools.json"), &catalog)
		var mu sync.Mutex
		var calls []recordedCall
		kinds := map[string]string{}
		var tools []tool.Tool
		for _, td := range catalog.Tools {
			raw, _ := json.Marshal(map[string]any{"name": td.Name, "parameters": td.Parameters})
			def, err := funcdef.Parse(raw, funcdef.Options{})
			if err != nil {
				t.Fatalf("%s/%s: %v", domain, td.Name, err)
			}
			risk := tool.RiskRead
			if td.Type == "WRITE" {
				risk = tool.RiskWriteFull
			}
			kinds[td.Name] = td.Type
			tools = append(tools, recordingTool{spec: def.Spec(risk), mu: &mu, calls: &calls})
		}
		reg, err := tool.NewRegistry(tools...)
		if err != nil {
			t.Fatal(err)
		}
		e := turntest.New(t, turn.Config{Tools: reg,
			Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"agent": {Tools: []string{"*"}}}}},
		})
		eng, model := e.Engine, e.Model
		id := chat.Identity{TenantID: "t", UserID: "agent", Role: "agent", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe, chat.ScopeWriteFull}}

		var tasks []struct {
			ID       string `json:"id"`
			Criteria struct {
				Actions []struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"actions"`
			} `json:"evaluation_criteria"`
		}
		readJSON(t, filepath.Join(base, "data", "tau2", "domains", domain, "tasks.json"), &tasks)
		send := func(conv, text, button string) chat.Outbound {
			out, err := eng.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: conv, Text: text, Button: button})
			if err != nil {
				t.Fatalf("turn: %v", err)
			}
			return out
		}
		n := 0
		for _, task := range tasks {
			for i, a := range task.Criteria.Actions {
				conv := fmt.Sprintf("%s-%s-%d", domain, task.ID, i)
				proposal, _ := json.Marshal(map[string]any{"say": "Done!", "tool": a.Name, "args": a.Arguments, "done": false, "newTopic": false, "buttons": []any{}})
				model.Push(llmtest.Text(string(proposal)))
				before := len(calls)
				out := send(conv, "please take care of my request", "") // a request, not a yes to nothing
				if kinds[a.Name] != "WRITE" {
					if len(calls) != before+1 || len(out.Executed) != 1 {
						t.Errorf("%s %s: read action did not run once (%d calls)", conv, a.Name, len(calls)-before)
					}
					continue
				}
				n++
				if out.Pending == nil || out.Pending.Tool != a.Name || len(calls) != before {
					t.Errorf("%s %s: write not held for confirmation (pending %v, %d calls)", conv, a.Name, out.Pending, len(calls)-before)
					continue
				}
				if out.Say == "Done!" {
					t.Errorf("%s: the model's claim was shown before anything ran", conv)
				}
				// On the yes turn the model would propose other arguments.
				model.Push(llmtest.Text(string(otherArgs(t, a.Name, a.Arguments))))
				asked := model.Calls()
				send(conv, "yes", "")
				if model.Calls() != asked {
					t.Errorf("%s: the model was asked on the yes turn", conv)
				} else {
					_, _ = model.Complete(context.Background(), llm.Request{}) // the unused proposal
				}
				if len(calls) != before+1 {
					t.Errorf("%s %s: %d backend calls after yes, want 1", conv, a.Name, len(calls)-before)
					continue
				}
				got := calls[len(calls)-1]
				if got.Tool != a.Name || !sameJSON(got.Args, a.Arguments) || got.Key == "" {
					t.Errorf("%s: backend got %s %s (key %q), want the stored %s %s", conv, got.Tool, got.Args, got.Key, a.Name, a.Arguments)
				}
				again := send(conv, "yes", "")
				if len(calls) != before+1 || len(again.Executed) != 0 || again.Pending != nil {
					t.Errorf("%s: a second yes reached the backend or proposed something", conv)
				}
			}
		}
		total[domain] = n

		// The refusal tasks: every write the domain has, proposed with
		// the arguments of a reference action, and declined.
		example := map[string]json.RawMessage{}
		for _, task := range tasks {
			for _, a := range task.Criteria.Actions {
				if _, ok := example[a.Name]; !ok && kinds[a.Name] == "WRITE" {
					example[a.Name] = a.Arguments
				}
			}
		}
		for _, task := range tasks {
			if len(task.Criteria.Actions) > 0 {
				continue
			}
			refusals[domain]++
			before := len(calls)
			for _, name := range slices.Sorted(maps.Keys(example)) {
				conv := fmt.Sprintf("%s-refusal-%s-%s", domain, task.ID, name)
				proposal, _ := json.Marshal(map[string]any{"say": "Done!", "tool": name, "args": example[name], "done": false, "newTopic": false, "buttons": []any{}})
				model.Push(llmtest.Text(string(proposal)))
				if out := send(conv, "please do it anyway", ""); out.Pending == nil || out.Pending.Tool != name {
					t.Errorf("%s: %s not held (pending %v)", conv, name, out.Pending)
				}
				send(conv, "no", "")
				if out := send(conv, "yes", ""); out.Pending != nil || len(out.Executed) != 0 {
					t.Errorf("%s: a yes after the no ran or proposed something", conv)
				}
			}
			if len(calls) != before {
				t.Errorf("%s refusal task %s: %d writes reached the backend after the user said no", domain, task.ID, len(calls)-before)
			}
		}
		if model.Remaining() != 0 {
			t.Errorf("%s: %d scripted replies unused", domain, model.Remaining())
		}
	}
	// Upstream counts: airline 49 writes, retail 176; 7 and 2 tasks with no
	// action.
	if total["airline"] != 49 || total["retail"] != 176 {
		t.Errorf("write actions replayed: %v, want airline 49, retail 176", total)
	}
	if refusals["airline"] != 7 || refusals["retail"] != 2 {
		t.Errorf("refusal tasks replayed: %v, want airline 7, retail 2", refusals)
	}
}

// otherArgs is a proposal of the same tool whose first string argument
// (in name order) differs from args.
func otherArgs(t *testing.T, name string, args json.RawMessage) []byte {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s, ok := m[k].(string); ok {
			m[k] = s + "-other"
			break
		}
	}
	proposal, _ := json.Marshal(map[string]any{"say": "Done!", "tool": name, "args": m, "done": false, "newTopic": false, "buttons": []any{}})
	return proposal
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
