package config

import "time"

// Defaults of the lifetimes and of the memory's TTL, as the engine applies
// them; the checks below compare what will be in force.
const (
	defaultCaseLifetime = 30 * 24 * time.Hour
	defaultMemoryTTL    = 30 * time.Minute
	defaultInterviewTTL = 24 * time.Hour
)

// lifetimes checks the top-level lifetimes and each assistant's: a case
// binding must outlive the messages the model still sees of its case (or
// the conversation could be bound to another case with them in view), and
// an assistant sets only the lifetimes of what its mode has.
func (v *validator) lifetimes(c *Config) {
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
