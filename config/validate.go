package config

import (
	"maps"
	"slices"
)

// validator collects the problems of a configuration, each with the line
// of the value at fault.
type validator struct {
	cfg    *Config
	getenv func(string) string
	errs   Errors
}

// errorf records a problem at path (see Config.Problem).
func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, v.cfg.Problem(path, format, args...))
}

// uniqueKey checks field, the name or id key of the list entry at p: it
// is required, and no entry before it (seen) has it, else twice, given key
// and then args, is the error.
func (v *validator) uniqueKey(seen map[string]bool, p, field, key, twice string, args ...any) {
	if key == "" {
		v.errorf(p, "%s is required", field)
	} else if seen[key] {
		v.errorf(p+"."+field, twice, append([]any{key}, args...)...)
	}
	seen[key] = true
}

// validate checks what c means once it decoded. Each section checks
// itself, with the check method beside its type; a section that names
// others (a tenant's assistant, a strategy's models) looks them up in
// v.cfg. Kinds themselves are the program's (server.Check): only the
// settings of the kinds described here are checked.
func (v *validator) validate(c *Config) {
	v.expandEnv(c)
	c.Store.check(v)
	c.Journal.check(v)
	v.checkModels(c.Models)
	v.checkStrategies(c)
	c.Memory.check(v)
	v.checkLifetimes(c)
	c.Limits.check(v)
	v.checkAssistants(c.Assistants)
	v.checkTenants(c.Tenants)
	c.Tools.check(v)
	c.Channels.check(v)
	c.Observability.check(v)
	v.checkCommands(c.Commands)
	c.Log.check(v)
}

// role checks that a role named at path (an approval's approvers) is a
// role of some tenant.
func (v *validator) role(path, name string) {
	var roles []string
	for _, t := range v.cfg.Tenants {
		if _, ok := t.Roles[name]; ok {
			return
		}
		roles = append(roles, sortedKeys(t.Roles)...)
	}
	v.errorf(path, "no tenant defines a role %q%s", name, DidYouMean(name, roles))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
