package config

import "fmt"

// Built-in strategies, computed from the models list when the
// configuration does not define them: balanced is the list in order, cheap
// orders it by price (cheapest first), strong by price (dearest first).
var builtinStrategies = map[string]bool{"balanced": true, "cheap": true, "strong": true}

// BuiltinStrategy reports whether name is a built-in strategy.
func BuiltinStrategy(name string) bool { return builtinStrategies[name] }

// checkStrategies checks that every strategy's chain names configured
// models, and that the default strategy exists.
func (v *validator) checkStrategies(c *Config) {
	names := c.modelNames()
	for name, chain := range c.Strategies {
		if len(chain) == 0 {
			v.errorf("strategies."+name, "a strategy needs at least one model")
		}
		for i, m := range chain {
			if !names[m] {
				v.errorf(fmt.Sprintf("strategies.%s[%d]", name, i), "no model named %q in models%s", m, DidYouMean(m, sortedKeys(names)))
			}
		}
	}
	if c.Strategy != "" && len(c.Models) > 0 && !c.knownStrategy(c.Strategy) {
		v.errorf("strategy", "unknown strategy %q%s", c.Strategy, DidYouMean(c.Strategy, c.strategyNames()))
	}
}

// knownStrategy reports whether name is a strategy of the configuration
// or a built-in one.
func (c *Config) knownStrategy(name string) bool {
	return c.Strategies[name] != nil || builtinStrategies[name]
}

// strategyNames are the strategies a name may be a typo of: the
// configuration's, then the built-in ones.
func (c *Config) strategyNames() []string {
	return append(sortedKeys(c.Strategies), sortedKeys(builtinStrategies)...)
}
