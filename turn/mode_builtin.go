package turn

// DefaultMode is the mode of an assistant that names none, and of the
// assistant a tenant without one runs under: the single-decision mode
// (package turn/mode/single), which Config.Modes must hold.
const DefaultMode ModeName = "single"

// LoopMode is ModeLoop, for the registry of the built-in modes (package
// turn/mode/builtin). It moves to a package of its own under turn/mode
// once the gate's API exists: its calls go through the guards with the
// kernel's internals today, not through Turn.
func LoopMode() Mode { return loopMode{} }

// RouterMode is ModeRouter, for the registry of the built-in modes. It
// moves to a package of its own under turn/mode once the gate's API
// exists, as the loop does.
func RouterMode() Mode { return routerMode{} }
