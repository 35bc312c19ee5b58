package config

// Built-in strategies, computed from the models list when the
// configuration does not define them: balanced is the list in order, cheap
// orders it by price (cheapest first), strong by price (dearest first).
var builtinStrategies = map[string]bool{"balanced": true, "cheap": true, "strong": true}

// BuiltinStrategy reports whether name is a built-in strategy.
func BuiltinStrategy(name string) bool { return builtinStrategies[name] }
