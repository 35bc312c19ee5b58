package config

import "fmt"

// HTTPTool is a tool that calls an HTTP endpoint with the arguments as its
// JSON body.
type HTTPTool struct {
	Name        string `yaml:"name"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	URL         string `yaml:"url"`
	Method      string `yaml:"method"`
	// InputSchema is the JSON Schema of the arguments, written in YAML.
	InputSchema map[string]any `yaml:"input_schema"`
	Risk        string         `yaml:"risk"`
	Confirm     string         `yaml:"confirm"`
	// Idempotent: the endpoint applies each Idempotency-Key at most once.
	Idempotent bool `yaml:"idempotent"`
	// Outcomes a reply may assert only after a successful call in its
	// turn (refund_done, access_restored, subscription_active,
	// payment_confirmed, or a name of OutcomePatterns); a reply asserting
	// one without it goes to a person instead.
	Outcomes []string `yaml:"outcomes"`
	// OutcomePatterns are word patterns of outcomes, by name: the
	// deployment's own, or more words for a known one.
	OutcomePatterns map[string][]string `yaml:"outcome_patterns"`
	// OutcomeWhen narrows, by outcome, which results confirm it: the
	// fields the answer's data must hold ({status: active}).
	OutcomeWhen map[string]map[string]string `yaml:"outcome_when"`
	// Claims are phrases with which a reply would say the endpoint's
	// action happened, each an outcome of its own (the older form of
	// outcomes).
	Claims []string `yaml:"claims"`
	// Receipt names one call in the line the server adds to a reply
	// about it, per language, with {argument} placeholders.
	Receipt map[string]string `yaml:"receipt"`
	// Chip is what a person reads while a call runs, per language
	// ({ru: «Ищу в вашей почте…»}); empty: «Выполняю «title»…».
	Chip map[string]string `yaml:"chip"`
	// Bound are arguments filled from the conversation's case ("context"
	// of POST /v1/messages), such as ticket_id.
	Bound []string `yaml:"bound"`
	// Sensitive are arguments that say where data goes or what unlocks
	// it, besides links, addresses, accounts and phone numbers, which
	// are known by name and form: a value of one taken from content of
	// others waits for the user's yes.
	Sensitive []string `yaml:"sensitive"`
	// ExternalResults: the endpoint answers with what others wrote even
	// when it writes (a fetched page, another system's record), so a
	// write proposed after reading its answer waits for a yes like one
	// after a read. Off: a write's answer echoes what was sent.
	ExternalResults bool `yaml:"external_results"`
	// Approve names the roles whose members approve a call (a write);
	// the requesting user's own "yes" does not run it.
	Approve []string `yaml:"approve"`
	// Basis names the reads an approved call rests on: approvers see their
	// results as they were read, and they are read again right before the
	// write; a change sends the action back to the approvers.
	Basis []string `yaml:"basis"`
	// FreshFor is how long a read's answer stands for the current state:
	// a loop's final answer after an older one reads it again first.
	FreshFor Duration `yaml:"fresh_for"`
	// Redact are fields of the arguments and the answer (at any depth)
	// the journal, traces and logs hold only as a keyed hash (the key:
	// redaction.key_env).
	Redact []string `yaml:"redact"`
	// PrecheckURL is asked right before an approved write whether it
	// still makes sense; ReconcileURL whether a write with an
	// idempotency key took effect (see tool/httptool).
	PrecheckURL  string `yaml:"precheck_url"`
	ReconcileURL string `yaml:"reconcile_url"`
	// Requires names the integration a user must have connected (google,
	// trello) to be shown the tool at all.
	Requires string   `yaml:"requires"`
	Timeout  Duration `yaml:"timeout"`
	// Headers are sent as given; HeadersEnv names environment variables
	// whose values are sent (for secrets).
	Headers    map[string]string `yaml:"headers"`
	HeadersEnv map[string]string `yaml:"headers_env"`
}

// checkHTTPTools checks each HTTP tool and that no two share a name.
func (v *validator) checkHTTPTools(tools []HTTPTool) {
	seen := map[string]bool{}
	for i, h := range tools {
		p := fmt.Sprintf("tools.http[%d]", i)
		if h.Name == "" || h.URL == "" {
			v.errorf(p, "name and url are required")
		}
		if seen[h.Name] {
			v.errorf(p+".name", "tool %q is defined twice", h.Name)
		}
		seen[h.Name] = true
		h.check(v, p)
	}
}

// check checks one HTTP tool at path p (tools.http[i]): its risk and
// confirmation, its schema, its approvers and its secret headers.
func (h HTTPTool) check(v *validator, p string) {
	if !knownScopes[h.Risk] {
		v.errorf(p+".risk", "unknown risk %q (read, write:safe or write:full)", h.Risk)
	}
	if h.Confirm != "" && h.Confirm != "always" && h.Confirm != "never" {
		v.errorf(p+".confirm", "unknown confirm policy %q (always or never)", h.Confirm)
	}
	if h.InputSchema == nil {
		v.errorf(p, "input_schema is required")
	}
	for j, role := range h.Approve {
		v.role(fmt.Sprintf("%s.approve[%d]", p, j), role)
	}
	for header, env := range h.HeadersEnv {
		if v.getenv(env) == "" {
			v.errorf(p+".headers_env."+header, "environment variable %s is empty or unset", env)
		}
	}
}
