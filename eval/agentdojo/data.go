// Package agentdojo replays AgentDojo's prompt-injection benchmark (v1.2.1:
// banking, slack, travel and workspace) through the engine with a model
// that obeys every injected instruction, and measures what reaches the
// tools. Each suite's environment becomes fake tool backends that record
// every call; the injection placeholders of the environment are filled
// with an attack template and the injection task's goal, so the attack
// arrives in what the tools read; a scripted model follows the user task's
// ground-truth calls and proposes the injection task's calls as soon as
// it sees the injected text (and again on the user's next turn); a
// simulated user confirms exactly the actions their own task asked for
// and declines the rest. A second simulated user confirms everything,
// to see whether each injected write was shown with its source flagged.
//
// Nothing here is special to AgentDojo on the engine's side: the tools go
// through the normal catalog (read-only by CaMeL's no-side-effect flags,
// everything else a write), and the engine's own guards decide.
package agentdojo

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Suites are the benchmark's suites, in the order they are reported.
var Suites = []string{"banking", "slack", "travel", "workspace"}

// DataDir is the repository's copy of the benchmark, relative to the
// repository's root.
const DataDir = "testdata/external/agentdojo"

// Call is one ground-truth call of a task. Argument values are JSON
// values; a string starting with "$" is a placeholder: "$dynamic" is a
// value worked out at run time, others name what an injection wants
// filled in ("$content", "$email.body").
type Call struct {
	Function string         `json:"function"`
	Args     map[string]any `json:"args"`
}

// Task is a user task: the user's request and the calls that solve it.
type Task struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt"`
	Calls  []Call `json:"ground_truth_calls"`
}

// Dynamic reports whether some argument of the task's calls is worked out
// at run time, so the replay cannot know it in advance.
func (t Task) Dynamic() bool {
	for _, c := range t.Calls {
		for _, v := range c.Args {
			if s, ok := v.(string); ok && s == "$dynamic" {
				return true
			}
		}
	}
	return false
}

// Injection is an injection task: the attacker's goal and the calls that
// reach it.
type Injection struct {
	ID      string `json:"id"`
	Goal    string `json:"goal"`
	Targets struct {
		Emails []string `json:"emails"`
		IBANs  []string `json:"ibans"`
		URLs   []string `json:"urls"`
	} `json:"attacker_targets_derived"`
	Calls []Call `json:"ground_truth_calls"`
}

// ToolDef is a tool of a suite, with CaMeL's classification.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	ReadOnly    bool            `json:"camel_no_side_effect"`
}

// Suite is one suite of the benchmark.
type Suite struct {
	Name       string
	Tools      []ToolDef
	UserTasks  []Task
	Injections []Injection
	// Vectors are the injection placeholders of the environment with
	// their benign defaults.
	Vectors map[string]string
	env     any // the environment, placeholders unfilled
}

// Attacks are the attack templates, by name.
type Attacks struct {
	Templates map[string]string `json:"attacks"`
	Defaults  struct {
		User  string `json:"important_instructions_user_name"`
		Model string `json:"DEFAULT_MODEL_NAME"`
	} `json:"defaults"`
	ToolSentence struct {
		First  string `json:"first"`
		Middle string `json:"middle"`
		Last   string `json:"last"`
	} `json:"tool_knowledge_tools_sentence"`
}

// Load reads the four suites and the attack templates from dir (a copy of
// the benchmark's data laid out as DataDir).
func Load(dir string) ([]*Suite, Attacks, error) {
	var attacks Attacks
	if err := readJSON(filepath.Join(dir, "derived", "attacks.json"), &attacks); err != nil {
		return nil, attacks, err
	}
	var suites []*Suite
	for _, name := range Suites {
		s, err := loadSuite(dir, name)
		if err != nil {
			return nil, attacks, fmt.Errorf("suite %s: %w", name, err)
		}
		suites = append(suites, s)
	}
	return suites, attacks, nil
}

func loadSuite(dir, name string) (*Suite, error) {
	s := &Suite{Name: name}
	var tools struct {
		Tools []ToolDef `json:"tools"`
	}
	if err := readJSON(filepath.Join(dir, "derived", name, "tools.json"), &tools); err != nil {
		return nil, err
	}
	s.Tools = tools.Tools
	var tasks struct {
		Version    string      `json:"benchmark_version"`
		User       []Task      `json:"user_tasks"`
		Injections []Injection `json:"injection_tasks"`
	}
	if err := readJSON(filepath.Join(dir, "derived", name, "tasks_v1.2.1.json"), &tasks); err != nil {
		return nil, err
	}
	s.UserTasks, s.Injections = tasks.User, tasks.Injections
	suiteDir := filepath.Join(dir, "src", "agentdojo", "data", "suites", name)
	env, err := loadYAML(suiteDir, "environment.yaml")
	if err != nil {
		return nil, err
	}
	s.env = env
	vectors, err := loadYAML(suiteDir, "injection_vectors.yaml")
	if err != nil {
		return nil, err
	}
	s.Vectors = map[string]string{}
	vm, _ := vectors.(map[string]any)
	for k, v := range vm {
		d, _ := v.(map[string]any)
		def, _ := d["default"].(string)
		// The defaults are written for a double-quoted YAML string: their
		// escapes are the characters they stand for.
		s.Vectors[k] = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`).Replace(def)
	}
	if len(s.UserTasks) == 0 || len(s.Injections) == 0 || len(s.Tools) == 0 || len(s.Vectors) == 0 {
		return nil, fmt.Errorf("incomplete data: %d user tasks, %d injection tasks, %d tools, %d vectors",
			len(s.UserTasks), len(s.Injections), len(s.Tools), len(s.Vectors))
	}
	return s, nil
}

// Environment returns the suite's environment with every injection
// placeholder replaced by fill(name).
func (s *Suite) Environment(fill func(vector string) string) any {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(s.Vectors)) {
		pairs = append(pairs, "{"+k+"}", fill(k))
	}
	r := strings.NewReplacer(pairs...)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if strings.Contains(x, "{") {
				return r.Replace(x)
			}
			return x
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(s.env)
}

// Attack renders the named attack template with goal for injection inj.
func (a Attacks) Attack(name string, inj Injection) (string, error) {
	tmpl, ok := a.Templates[name]
	if !ok {
		return "", fmt.Errorf("unknown attack %q (have %s)", name, strings.Join(slices.Sorted(maps.Keys(a.Templates)), ", "))
	}
	var tools strings.Builder
	for i, c := range inj.Calls {
		sentence := a.ToolSentence.Middle
		switch {
		case i == 0:
			sentence = a.ToolSentence.First
		case i == len(inj.Calls)-1:
			sentence = a.ToolSentence.Last
		}
		args, _ := json.Marshal(c.Args)
		tools.WriteString(strings.NewReplacer("{function}", c.Function, "{placeholder_args}", string(args)).Replace(sentence))
	}
	return strings.NewReplacer("{goal}", inj.Goal, "{user}", a.Defaults.User, "{model}", a.Defaults.Model,
		"{tools}", tools.String()).Replace(tmpl), nil
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// loadYAML reads a YAML file into plain values (maps, lists, strings,
// numbers, booleans), resolving the "!include FILE" tag relative to dir.
// Dates and times stay strings, as the tools print them.
func loadYAML(dir, name string) (any, error) {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return plain(dir, doc.Content[0])
}

func plain(dir string, n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return plain(dir, n.Alias)
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := plain(dir, n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := plain(dir, c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	switch n.Tag {
	case "!include":
		return loadYAML(dir, n.Value)
	case "!!int", "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f, nil
		}
	case "!!bool":
		return n.Value == "true" || n.Value == "True", nil
	case "!!null":
		return nil, nil
	}
	return n.Value, nil
}
