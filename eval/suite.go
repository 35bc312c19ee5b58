// Package eval runs scenario suites against an assistant's configuration
// through the real engine and judges every turn by what the journal says
// happened — tools chosen and their arguments, vetoes, confirmations,
// approvals, claims the server stopped, repeated writes, latency and cost
// — not by the final text alone. Each scenario runs k times on a fresh
// store (pass^k: it passes only when every run passes), with the models
// answered from recordings (llm/cassette), so suites run offline in CI.
package eval

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arbiterhq/arbiter/chat"
)

// Suite is a file of scenarios.
type Suite struct {
	Name string `yaml:"name"`
	// As is the API key the turns run as unless a turn names another.
	As string `yaml:"as"`
	// Env is the environment the suite runs its configuration with (the
	// keys' tokens, the model's variables, as they were when it was
	// recorded); it overrides the process's, and an empty value unsets a
	// variable.
	Env       map[string]string `yaml:"env"`
	Scenarios []Scenario        `yaml:"scenarios"`
}

// Scenario is a conversation: its turns in order, each with what must
// have happened.
type Scenario struct {
	Name  string `yaml:"name"`
	Turns []Turn `yaml:"turns"`
	// Before are requests that set the backend up before the turns (a
	// simulator's reset); After checks what the backend holds after them.
	Before []Request `yaml:"before"`
	After  []Request `yaml:"after"`
}

// Turn is one message and its expectations.
type Turn struct {
	As string `yaml:"as"`
	// Text is the user's words; "$link" in it (and in evidence) is the
	// newest link a reply of the scenario showed.
	Text string `yaml:"text"`
	// Button presses a button of the newest reply that showed buttons: its
	// label, its value, "#N" for the Nth, or "confirm" / "cancel".
	Button string `yaml:"button"`
	// Value is a button value sent as is: a button the client offers
	// itself, such as a skill's "skill:documents".
	Value string `yaml:"value"`
	// Decide is "approve" or "reject": as the turn's key, decide the
	// newest action of the conversation that waits for approvers; the
	// expectations are then of the turn that carried it out.
	Decide   string            `yaml:"decide"`
	Evidence []chat.Evidence   `yaml:"evidence"`
	Context  map[string]string `yaml:"context"`
	Client   *ClientHint       `yaml:"client"`
	Expect   Expect            `yaml:"expect"`
}

// ClientHint is what the client says the user is doing (chat.ClientHint).
type ClientHint struct {
	OpenDocument string `yaml:"open_document"`
	ActiveMode   string `yaml:"active_mode"`
	Tab          string `yaml:"tab"`
}

// Expect is what the journal must show for a turn. Empty fields are not
// checked.
type Expect struct {
	// Tool is the tool the turn proposed, ran or sent for approval; Args a
	// subset of its arguments (values compared as JSON).
	Tool string         `yaml:"tool"`
	Args map[string]any `yaml:"args"`
	// NoTool: nothing was proposed, run or sent for approval.
	NoTool bool `yaml:"no_tool"`
	// Pending is the tool waiting for the user's "yes" after the turn;
	// Approval the tool sent to approvers; Executed a tool that ran with
	// success.
	Pending  string `yaml:"pending"`
	Approval string `yaml:"approval"`
	Executed string `yaml:"executed"`
	// Vetoed is the reason of a veto the turn must show (invalid_args,
	// not_granted, evidence_only, …).
	Vetoed string `yaml:"vetoed"`
	// Skill is the chat's skill after the turn (a router assistant's
	// conversational mode); "none" for none.
	Skill string `yaml:"skill"`
	// SayContains and SayLacks are checked against the reply's text.
	SayContains []string `yaml:"say_contains"`
	SayLacks    []string `yaml:"say_lacks"`
	// Status is the reply's status: ok (the default when set to "") or
	// needs_review.
	Status string `yaml:"status"`
	// MaxModelCalls and MaxCost bound the turn (0: not checked).
	MaxModelCalls int     `yaml:"max_model_calls"`
	MaxCost       float64 `yaml:"max_cost"`
}

// LoadSuite reads a suite file.
func LoadSuite(path string) (*Suite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSuite(f)
}

// ParseSuite reads a suite: unknown keys are errors, and so are scenarios
// without a name or turns and turns without a message.
func ParseSuite(r io.Reader) (*Suite, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var s Suite
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var errs []error
	seen := map[string]bool{}
	if len(s.Scenarios) == 0 {
		errs = append(errs, errors.New("suite: no scenarios"))
	}
	for i, sc := range s.Scenarios {
		where := fmt.Sprintf("scenarios[%d]", i)
		switch {
		case strings.TrimSpace(sc.Name) == "":
			errs = append(errs, fmt.Errorf("%s: no name", where))
		case seen[Slug(sc.Name)]:
			errs = append(errs, fmt.Errorf("%s: the name %q is taken (names must differ in letters and digits)", where, sc.Name))
		}
		seen[Slug(sc.Name)] = true
		if len(sc.Turns) == 0 {
			errs = append(errs, fmt.Errorf("%s (%s): no turns", where, sc.Name))
		}
		for j, r := range slices.Concat(sc.Before, sc.After) {
			if strings.TrimSpace(r.URL) == "" {
				errs = append(errs, fmt.Errorf("%s (%s) before/after[%d]: no url", where, sc.Name, j))
			}
		}
		for j, t := range sc.Turns {
			if t.Text == "" && t.Button == "" && t.Value == "" && t.Decide == "" && len(t.Evidence) == 0 {
				errs = append(errs, fmt.Errorf("%s (%s) turns[%d]: no text, button, value, decision or evidence", where, sc.Name, j))
			}
			if t.Decide != "" && (t.Decide != "approve" && t.Decide != "reject" || t.Text != "" || t.Button != "" || t.Value != "") {
				errs = append(errs, fmt.Errorf("%s (%s) turns[%d]: decide is approve or reject, on a turn of its own", where, sc.Name, j))
			}
			if t.Button != "" && t.Value != "" {
				errs = append(errs, fmt.Errorf("%s (%s) turns[%d]: button and value exclude each other", where, sc.Name, j))
			}
			if t.As == "" && s.As == "" {
				errs = append(errs, fmt.Errorf("%s (%s) turns[%d]: no key (as) here or for the suite", where, sc.Name, j))
			}
			if e := t.Expect; e.NoTool && (e.Tool != "" || e.Pending != "" || e.Approval != "" || e.Executed != "") {
				errs = append(errs, fmt.Errorf("%s (%s) turns[%d]: no_tool with a tool expected", where, sc.Name, j))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &s, nil
}

var nonWord = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// Slug is a scenario's name as a directory name: its recordings live in
// <recordings>/<slug>.
func Slug(name string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(name), "-"), "-")
}
