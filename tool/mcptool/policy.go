package mcptool

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
)

// Policy is our side's word on the risk of a server's tools. The server's
// own metadata (annotations) is a hint that can only add caution; see the
// package documentation for the exact rules. The zero Policy is the most
// cautious one: an untrusted server whose tools are all hidden.
type Policy struct {
	// Trusted shows the server's tools that no entry of Tools configures.
	// On an untrusted server (the default) only configured tools are
	// visible.
	Trusted bool
	// DefaultRisk is the risk of a tool whose entry does not set one;
	// empty means tool.RiskWriteFull.
	DefaultRisk tool.Risk
	// DefaultConfirm is the confirmation policy of a tool whose entry does
	// not set one; empty means "always" for write:full and "never"
	// otherwise.
	DefaultConfirm tool.Confirm
	// Tools configures tools by name or glob pattern ("*" any run of
	// characters, "?" one character). When several patterns match, the
	// exact name wins, then the pattern with the most literal characters,
	// then the lexically smaller pattern.
	Tools map[string]ToolPolicy
}

// ToolPolicy configures the tools matching one pattern. Empty fields fall
// back to the Policy defaults (raised by the annotations).
type ToolPolicy struct {
	// Risk is the tool's side-effect level. When set, annotations are not
	// consulted for the risk at all: a readOnlyHint never lowers it and a
	// destructiveHint never raises it.
	Risk tool.Risk
	// Confirm is the tool's confirmation policy.
	Confirm tool.Confirm
	// Hidden removes the tool from every catalog and refuses calls to it.
	Hidden bool
	// Roles, when not empty, lists the caller roles that may run the tool;
	// other callers are refused at resolution and at call time. The
	// engine's own role configuration applies in addition.
	Roles []string
	// Title replaces the server's title in confirmations.
	Title string
	// Description replaces the server's description shown to the model
	// (advisable for servers whose descriptions are not trusted).
	Description string
	// Timeout bounds one call; zero means the server's default.
	Timeout time.Duration
	// Rate overrides the server's per-tool rate limit.
	Rate *Rate
}

// decision is the policy applied to one tool.
type decision struct {
	hidden  string // reason, empty when visible
	risk    tool.Risk
	confirm tool.Confirm
	entry   ToolPolicy
	// hinted is true when the annotations raised the risk or the
	// confirmation above what the configuration alone gives.
	hinted bool
}

// hints is the subset of an MCP tool's annotations the policy reads. Nil
// pointers are absent fields.
type hints struct {
	present     bool
	readOnly    bool
	destructive *bool
	openWorld   *bool
}

var riskOrder = map[tool.Risk]int{tool.RiskRead: 0, tool.RiskWriteSafe: 1, tool.RiskWriteFull: 2}

func maxRisk(a, b tool.Risk) tool.Risk {
	if riskOrder[b] > riskOrder[a] {
		return b
	}
	return a
}

// validate reports configuration errors: unknown risks or confirmation
// policies and malformed patterns.
func (p Policy) validate() error {
	if p.DefaultRisk != "" && !p.DefaultRisk.Valid() {
		return fmt.Errorf("default risk %q: want read, write:safe or write:full", p.DefaultRisk)
	}
	if !validConfirm(p.DefaultConfirm) {
		return fmt.Errorf("default confirm %q: want never or always", p.DefaultConfirm)
	}
	for pat, tp := range p.Tools {
		if pat == "" {
			return fmt.Errorf("tool pattern is empty")
		}
		if tp.Risk != "" && !tp.Risk.Valid() {
			return fmt.Errorf("tool %q: risk %q: want read, write:safe or write:full", pat, tp.Risk)
		}
		if !validConfirm(tp.Confirm) {
			return fmt.Errorf("tool %q: confirm %q: want never or always", pat, tp.Confirm)
		}
		if tp.Timeout < 0 {
			return fmt.Errorf("tool %q: negative timeout", pat)
		}
		if tp.Rate != nil {
			if err := tp.Rate.validate(); err != nil {
				return fmt.Errorf("tool %q: %w", pat, err)
			}
		}
	}
	return nil
}

func validConfirm(c tool.Confirm) bool {
	return c == "" || c == tool.ConfirmNever || c == tool.ConfirmAlways
}

// match returns the entry governing name, the pattern it came from, and
// whether the pattern is the exact name.
func (p Policy) match(name string) (ToolPolicy, string, bool) {
	if tp, ok := p.Tools[name]; ok {
		return tp, name, true
	}
	var best string
	found := false
	for pat := range p.Tools {
		if !globMatch(pat, name) {
			continue
		}
		if !found || moreSpecific(pat, best) {
			best, found = pat, true
		}
	}
	if !found {
		return ToolPolicy{}, "", false
	}
	return p.Tools[best], best, true
}

func moreSpecific(a, b string) bool {
	la, lb := literalLen(a), literalLen(b)
	if la != lb {
		return la > lb
	}
	return a < b
}

func literalLen(p string) int {
	return utf8.RuneCountInString(p) - strings.Count(p, "*") - strings.Count(p, "?")
}

// globMatch matches name against a pattern where '*' is any run of
// characters (including none) and '?' is exactly one character.
func globMatch(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni]):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// decide applies the policy to one tool: visibility, risk, confirmation.
func (p Policy) decide(name string, h hints) decision {
	entry, _, configured := p.match(name)
	_, exact := p.Tools[name]
	d := decision{entry: entry}
	switch {
	case configured && entry.Hidden:
		d.hidden = "hidden by configuration"
		return d
	case !configured && !p.Trusted:
		d.hidden = "not configured on an untrusted server"
		return d
	case sensitiveName(name) && !exact:
		d.hidden = "may reveal the server's environment or secrets; configure it by its exact name to show it"
		return d
	}

	// What the configuration alone says.
	risk := entry.Risk
	if risk == "" {
		risk = p.DefaultRisk
	}
	if risk == "" {
		risk = tool.RiskWriteFull
	}
	confirm := entry.Confirm
	if confirm == "" {
		confirm = p.DefaultConfirm
	}
	if confirm == "" {
		confirm = tool.ConfirmNever
		if risk == tool.RiskWriteFull {
			confirm = tool.ConfirmAlways
		}
	}
	d.risk, d.confirm = risk, confirm

	// Annotations raise what the entry leaves open, never lower it.
	hinted := hintRisk(h)
	if entry.Risk == "" {
		d.risk = maxRisk(risk, hinted)
	}
	if entry.Confirm == "" && d.risk == tool.RiskWriteFull && hinted == tool.RiskWriteFull {
		d.confirm = tool.ConfirmAlways
	}
	d.hinted = d.risk != risk || d.confirm != confirm
	return d
}

// hintRisk is the least risk the annotations allow, read with the MCP
// defaults for absent fields (readOnlyHint false, destructiveHint true,
// openWorldHint true). A tool that declares no annotations at all gets
// the same reading: the protocol's defaults assume the worst.
//
//   - readOnlyHint true: read (the hint never lowers anything: the result
//     is only ever combined with max).
//   - otherwise, destructiveHint true or openWorldHint true: write:full
//     (irreversible or external, the definition of write:full).
//   - otherwise (explicitly additive and closed-world): write:safe.
func hintRisk(h hints) tool.Risk {
	if h.readOnly {
		return tool.RiskRead
	}
	destructive := h.destructive == nil || *h.destructive
	openWorld := h.openWorld == nil || *h.openWorld
	if destructive || openWorld {
		return tool.RiskWriteFull
	}
	return tool.RiskWriteSafe
}

// sensitiveWords are name parts of tools that typically dump the process
// environment or credentials (the reference server's get-env, printEnv).
var sensitiveWords = map[string]bool{
	"env": true, "envs": true, "environ": true, "environment": true, "environments": true,
	"printenv": true, "getenv": true, "dumpenv": true,
	"secret": true, "secrets": true, "credential": true, "credentials": true,
}

// sensitiveName reports whether a tool name reads as dumping the
// environment or secrets: one of its words (split at '-', '_', '.', '/',
// spaces and lower-to-upper case changes) is in sensitiveWords.
func sensitiveName(name string) bool {
	for _, w := range nameWords(name) {
		if sensitiveWords[w] {
			return true
		}
	}
	return false
}

func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}

// roleAllowed reports whether role may run a tool whose entry lists roles.
func roleAllowed(roles []string, role string) bool {
	if len(roles) == 0 {
		return true
	}
	for _, r := range roles {
		if r == role || r == "*" {
			return true
		}
	}
	return false
}
