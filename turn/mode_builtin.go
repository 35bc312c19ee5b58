package turn

// DefaultMode is the mode of an assistant that names none, and of the
// assistant a tenant without one runs under: the single-decision mode
// (package turn/mode/single), which Config.Modes must hold.
const DefaultMode ModeName = "single"

// RouterMode is ModeRouter, for the registry of the built-in modes. It
// moves to a package of its own under turn/mode, as the loop did
// (turn/mode/loop).
func RouterMode() Mode { return routerMode{} }
