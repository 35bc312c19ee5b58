// Package builtin is the registry of arbiter's own assistant modes, for
// turn.Config.Modes (and server.Kinds.Modes): the engine defaults to none,
// since a mode's package imports the engine's.
package builtin

import (
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
	"github.com/arbiterhq/arbiter/turn/mode/router"
	"github.com/arbiterhq/arbiter/turn/mode/single"
)

// DefaultMode is the built-in modes' default (turn.Config.DefaultMode):
// one decision a turn.
const DefaultMode = single.Name

// Modes are the built-in modes by name, in a fresh map the caller may
// extend with its own: a new mode is a package under turn/mode and a row
// here, or a row a program adds.
func Modes() turn.Modes {
	return turn.Modes{
		single.Name:    single.New(),
		interview.Name: interview.New(),
		loop.Name:      loop.New(),
		router.Name:    router.New(),
	}
}
