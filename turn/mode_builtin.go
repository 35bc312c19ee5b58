package turn

// DefaultMode is the mode of an assistant that names none, and of the
// assistant a tenant without one runs under.
const DefaultMode = ModeSingle

// BuiltinModes are the modes of this package, by name: a new mode is a
// file and a row here, or a row a program adds to Config.Modes.
func BuiltinModes() Modes {
	return Modes{
		ModeSingle:    singleMode{},
		ModeLoop:      loopMode{},
		ModeInterview: interviewMode{},
		ModeRouter:    routerMode{},
	}
}
