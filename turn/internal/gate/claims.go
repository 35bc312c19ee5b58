package gate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/intent"
	"github.com/arbiterhq/arbiter/tool"
)

// Claims holds what a reply may assert and which tools confirm it: the
// outcomes every registered tool declares (tool.Spec.Outcomes and the
// older phrases, tool.Spec.Claims), compiled once. A reply may claim an
// action of a tool its assistant never sees.
type Claims struct {
	claims *intent.Claims
	// by is, per outcome, the tools whose successful call confirms it.
	by map[string][]confirmer
}

// confirmer is a tool whose successful call confirms an outcome, when its
// result's data holds the fields of when.
type confirmer struct {
	tool string
	when map[string]string
}

// CompileClaims compiles the registered tools' outcomes, and those no tool
// confirms (unconfirmable), with the general words of completion.
func CompileClaims(reg *tool.Registry, unconfirmable []string) (*Claims, error) {
	patterns := map[string][]string{}
	by := map[string][]confirmer{}
	add := func(toolName, outcome string, specs []string, when map[string]string) {
		patterns[outcome] = append(patterns[outcome], specs...)
		by[outcome] = append(by[outcome], confirmer{tool: toolName, when: when})
	}
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		for _, o := range entry.Spec.Outcomes {
			known := intent.Outcomes[o.Name]
			if len(known) == 0 && len(o.Patterns) == 0 {
				return nil, fmt.Errorf("tool %s: outcome %q is not one the engine knows (%s) and has no patterns", name, o.Name, knownOutcomes())
			}
			if _, seen := patterns[o.Name]; !seen {
				patterns[o.Name] = slices.Clone(known) // appended to below: never the shared list
			}
			add(name, o.Name, o.Patterns, o.When)
		}
		for _, phrase := range entry.Spec.Claims {
			if p := phrasePattern(phrase); p != "" {
				add(name, "claim: "+p, []string{p}, nil)
			}
		}
	}
	for _, name := range unconfirmable {
		if _, declared := patterns[name]; declared {
			continue // a tool's patterns; a tool here confirms it after all
		}
		if len(intent.Outcomes[name]) == 0 {
			return nil, fmt.Errorf("unconfirmable outcome %q is not one the engine knows (%s)", name, knownOutcomes())
		}
		patterns[name] = slices.Clone(intent.Outcomes[name])
	}
	c, err := intent.CompileClaims(patterns)
	if err != nil {
		return nil, err
	}
	return &Claims{claims: c, by: by}, nil
}

func knownOutcomes() string { return strings.Join(slices.Sorted(maps.Keys(intent.Outcomes)), ", ") }

// phrasePattern is a declared phrase as a pattern of its words, in order.
func phrasePattern(phrase string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if strings.ContainsRune("*|~.", r) {
			return ' '
		}
		return r
	}, phrase)), " ")
}

// Done is a call of the turn that succeeded: its tool and its result's
// data.
type Done struct {
	Tool string
	Data json.RawMessage
}

// Unconfirmed says why reply may not be sent as it stands — what it
// asserts and what does not confirm it — or returns "". An outcome needs
// a successful call of a tool that confirms it (done gives the turn's);
// general words of completion need every write of the turn done for
// certain (open describes one that is not, or returns ""). Both are asked
// only of a reply that asserts something. No Claims (nil) hold nothing.
func (c *Claims) Unconfirmed(reply string, done func() []Done, open func() string) string {
	if c == nil {
		return ""
	}
	var buf [4]intent.Assertion
	var calls []Done
	fetched := false
	for _, a := range c.claims.Find(buf[:0], reply) {
		if a.Outcome == "" {
			if o := open(); o != "" {
				return "the reply says it is done (" + a.Pattern + "), but " + o
			}
			continue
		}
		if !fetched {
			calls, fetched = done(), true
		}
		by := c.by[a.Outcome]
		if !slices.ContainsFunc(by, func(cf confirmer) bool { return cf.confirmedBy(calls) }) {
			return "the reply asserts " + a.Outcome + ", but " + unconfirmedBecause(by)
		}
	}
	return ""
}

func unconfirmedBecause(by []confirmer) string {
	if len(by) == 0 {
		return "no tool here confirms it"
	}
	names := make([]string, len(by))
	for i, c := range by {
		names[i] = c.tool
	}
	return "no call of " + strings.Join(names, " or ") + " confirmed it"
}

// confirmedBy reports whether one of calls is of c's tool with a result
// that holds c's fields.
func (c confirmer) confirmedBy(calls []Done) bool {
	for _, x := range calls {
		if x.Tool != c.tool {
			continue
		}
		if len(c.when) == 0 {
			return true
		}
		var data any
		if json.Unmarshal(x.Data, &data) != nil {
			continue
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(c.when)), func(k string) bool { return jsonField(data, k) != c.when[k] }) {
			return true
		}
	}
	return false
}

// jsonField is the value at a dotted path ("payment.status") of decoded JSON,
// as text; "" when there is none.
func jsonField(v any, path string) string {
	for key := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if v, ok = m[key]; !ok {
			return ""
		}
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
