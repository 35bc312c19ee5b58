// Package mode is where assistant modes written outside the engine live,
// each in a package of its own beside this one. A mode implements
// turn.Mode — it checks its assistants' settings, builds its prompts once
// per catalog and runs a turn through the turn.Turn handle — and is
// registered by name in turn.Config.Modes (server.Kinds.Modes for a
// configured server), beside arbiter's own from package builtin. What the engine should know of it besides is said
// by the optional interfaces turn.Resumer, turn.MessageTaker and
// turn.AnswerAwaiter. The tests here run a toy mode of this kind.
package mode
