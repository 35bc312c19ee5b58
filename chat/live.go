package chat

import (
	"context"
	"errors"
)

// Progress is a status update of a long step of a running turn, such as a
// tool reporting how far it got.
type Progress struct {
	Step    string  `json:"step"` // what runs, e.g. the tool's title
	Done    float64 `json:"done"`
	Total   float64 `json:"total,omitempty"` // zero when unknown
	Message string  `json:"message,omitempty"`
}

// Question is something a running turn must ask its user before it can go
// on — an MCP server asking to use the model, or asking for input. Its
// text is rendered by the server, never taken from model output.
type Question struct {
	Text string `json:"text"`
	// Choices are the answers offered as buttons; an Answer names one by
	// its Value.
	Choices []Button `json:"choices"`
	// FreeText means a typed reply answers too.
	FreeText bool `json:"free_text,omitempty"`
	// Scope is what an answer needs besides being the asked user's: the
	// scope the asking call ran under (its risk), so a read-only key cannot
	// approve what a write:full call asks. Set by the engine; empty means
	// any key of the asked user.
	Scope Scope `json:"scope,omitempty"`
}

// Answer is the user's answer to a Question: the Value of the pressed
// choice, or the typed text.
type Answer struct {
	Choice string `json:"choice,omitempty"`
	Text   string `json:"text,omitempty"`
}

// ErrNoLive: the channel cannot reach the user while a turn runs (a
// terminal, a plain API client), so a question cannot be asked.
var ErrNoLive = errors.New("the channel cannot ask the user during a turn")

// Live is what a channel offers a turn while it runs: status updates and
// questions before the reply. A channel hands it to the engine as
// Inbound.Live. Implementations are safe for concurrent use.
type Live interface {
	// Progress shows an update; it never blocks for long and may drop or
	// merge updates.
	Progress(p Progress)
	// Ask shows q to the user of the turn and waits for the answer, until
	// ctx ends.
	Ask(ctx context.Context, q Question) (Answer, error)
}

// Step kinds of a running turn, as a Streamer is told them.
const (
	StepRoute    = "route"    // the router chooses how to answer
	StepTool     = "tool"     // a tool call runs
	StepSkill    = "skill"    // the chat switches into or out of a skill
	StepApproval = "approval" // an action waits for its approvers
)

// Step is a step of a running turn that began or ended, with the text a
// person reads while it runs (a tool's chip: «Ищу в вашей почте…»). The
// text is the server's own, never the model's.
type Step struct {
	Kind string `json:"kind"`
	// Name is what the step is about: the tool, the skill.
	Name string `json:"name,omitempty"`
	Text string `json:"text,omitempty"`
	// Done: the step ended (false: it began).
	Done bool `json:"done"`
}

// Streamer is the optional capability of a Live that shows the turn as it
// runs: its steps, and the reply's text while the model writes it. Text
// pieces are in order and only ever what the reply would say (the engine
// holds back what it may still withhold); the reply returned at the end
// replaces them. Its methods must not block for long; they are safe for
// concurrent use.
type Streamer interface {
	Live
	Step(s Step)
	Text(piece string)
}
