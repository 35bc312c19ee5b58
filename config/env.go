package config

import (
	"fmt"
	"regexp"
)

// envRef is a reference to an environment variable in a value that may
// hold one: ${NAME}, or ${NAME:-default} to use default when NAME is
// unset or empty.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv resolves the environment references of the values that may
// hold them — where a deployment's addresses and model names differ, not
// its secrets (those have *_env fields): models' base_url and model, HTTP
// tools' url, precheck_url and reconcile_url. A reference to an unset
// variable without a default is an error at its line.
func (v *validator) expandEnv(c *Config) {
	for i := range c.Models {
		m, p := &c.Models[i], fmt.Sprintf("models[%d]", i)
		m.BaseURL = v.expand(p+".base_url", m.BaseURL)
		m.Model = v.expand(p+".model", m.Model)
	}
	for i := range c.Tools.HTTP {
		h, p := &c.Tools.HTTP[i], fmt.Sprintf("tools.http[%d]", i)
		h.URL = v.expand(p+".url", h.URL)
		h.PrecheckURL = v.expand(p+".precheck_url", h.PrecheckURL)
		h.ReconcileURL = v.expand(p+".reconcile_url", h.ReconcileURL)
	}
}

func (v *validator) expand(path, s string) string {
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if val := v.getenv(m[1]); val != "" {
			return val
		}
		if m[2] != "" {
			return m[3]
		}
		v.errorf(path, "environment variable %s is empty or unset", m[1])
		return ""
	})
}
