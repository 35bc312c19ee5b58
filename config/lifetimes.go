package config

import "time"

// Memory is the conversation memory policy.
type Memory struct {
	Window int      `yaml:"window"`
	TTL    Duration `yaml:"ttl"`
	Pause  Duration `yaml:"pause"`
}

// Lifetimes are how long each part of a conversation's state beside its
// memory is kept after the conversation's last turn; zero is the default.
// Messages follow memory, a pending confirmation confirmation.ttl, and an
// action waiting for approvers is kept until it ends.
type Lifetimes struct {
	// Case: the binding to a case (a message's context); another case is
	// refused for as long. Default 30d; at least memory.ttl.
	Case Duration `yaml:"case"`
	// Skill: an active skill while the chat is idle. Default 30d.
	Skill Duration `yaml:"skill"`
	// Interview: an interview waiting for its answer. Default 24h.
	Interview Duration `yaml:"interview"`
	// Offer: an offer of choices (a draft) and long buttons. Default 24h.
	Offer Duration `yaml:"offer"`
}

// Retention bounds how long records are kept; they are deleted in small
// batches in the background. Zero keeps a kind forever.
type Retention struct {
	// Turns is how long the journal keeps a turn (its trace, model and
	// tool calls); default 90 days.
	Turns Duration `yaml:"turns"`
	// Executions is how long a finished write's execution record (the
	// idempotency ledger: a redelivery older than this could run again)
	// is kept; default 400 days.
	Executions Duration `yaml:"executions"`
	// Every is how often the pruning runs; default 10m.
	Every Duration `yaml:"every"`
	// Keep turns off pruning: every record is kept.
	Keep bool `yaml:"keep"`
}

// Confirmation configures pending actions.
type Confirmation struct {
	TTL Duration `yaml:"ttl"`
	// ApprovalTTL is how long an action waits for its approvers; default
	// 24h.
	ApprovalTTL Duration `yaml:"approval_ttl"`
	// ReadBack bounds how an approved write whose answer was lost is read
	// back (reconcile_url) while its system cannot answer.
	ReadBack ReadBack `yaml:"read_back"`
}

// ReadBack is the read-back's retry policy: attempts in all, the first
// retry after wait, each later one after twice the wait before it;
// defaults 5 and 500ms.
type ReadBack struct {
	Attempts int      `yaml:"attempts"`
	Wait     Duration `yaml:"wait"`
}

// Defaults of the lifetimes and of the memory's TTL, as the engine applies
// them; the checks below compare what will be in force.
const (
	defaultCaseLifetime = 30 * 24 * time.Hour
	defaultMemoryTTL    = 30 * time.Minute
	defaultInterviewTTL = 24 * time.Hour
)

// checkLifetimes checks the top-level lifetimes and each assistant's: a
// case binding must outlive the messages the model still sees of its case
// (or the conversation could be bound to another case with them in view),
// and an assistant sets only the lifetimes of what its mode has.
func (v *validator) checkLifetimes(c *Config) {
	or := func(d Duration, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return time.Duration(d)
	}
	caseOK := func(path, caseKey, ttlKey string, lc, ttl time.Duration) {
		if lc < ttl {
			v.errorf(path, "%s (%v) is shorter than %s (%v): a case binding must outlive the messages of its case the model still sees",
				caseKey, lc, ttlKey, ttl)
		}
	}
	top := or(c.Lifetimes.Case, defaultCaseLifetime)
	at := "lifetimes.case"
	if c.Lifetimes.Case == 0 {
		at = "memory.ttl" // the value in the file that is at fault
	}
	caseOK(at, "lifetimes.case", "memory.ttl", top, or(c.Memory.TTL, defaultMemoryTTL))
	for _, name := range sortedKeys(c.Assistants) {
		a, p := c.Assistants[name], "assistants."+name
		l := a.Lifetimes
		if l.Case != 0 || a.Memory.TTL != 0 {
			ttl := or(c.Memory.TTL, defaultMemoryTTL)
			if a.Mode == "interview" {
				ttl = defaultInterviewTTL
			}
			ttl = or(a.Memory.TTL, ttl)
			path, caseKey := p+".lifetimes.case", p+".lifetimes.case"
			if l.Case == 0 {
				path, caseKey = p+".memory.ttl", "lifetimes.case"
			}
			caseOK(path, caseKey, p+".memory.ttl", or(l.Case, top), ttl)
		}
		if l.Interview != 0 && a.Mode != "interview" {
			v.errorf(p+".lifetimes.interview", "only an interview assistant (mode interview) has interviews")
		}
		if l.Skill != 0 && a.Mode != "router" {
			v.errorf(p+".lifetimes.skill", "only a router assistant (mode router) has skills")
		}
	}
}

// check refuses a negative window (zero takes the default).
func (m Memory) check(v *validator) {
	if m.Window < 0 {
		v.errorf("memory.window", "must be positive")
	}
}
