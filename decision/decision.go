// Package decision holds the contract between the model and the server: the
// Decision a model proposes ({"say","tool","args","done","newTopic",
// "buttons"}), its embedded JSON Schema, the schema variants sent as
// structured output for a given tool catalog, and the strict parser that
// turns model text into a Decision or a ParseError with locations.
//
// It decides nothing about whether a proposal may run: catalog, rights,
// argument validation and confirmation are the turn engine's job.
package decision

import (
	_ "embed"
	"encoding/json"

	"github.com/arbiterhq/arbiter/chat"
)

// SchemaJSON is the decision contract as JSON Schema (draft 2020-12), the
// form every model output must take.
//
//go:embed schema.json
var SchemaJSON []byte

// Decision is what the model proposes for one turn.
type Decision struct {
	// Say is the text for the user. When a tool runs, the server renders
	// the reply from the tool's result instead.
	Say string `json:"say"`
	// Tool is the proposed tool; "" means no tool (JSON null).
	Tool string `json:"tool"`
	// Args are the proposed arguments, always a JSON object ("{}" if none).
	Args json.RawMessage `json:"args"`
	// Done marks the topic finished: memory is cleared after the turn.
	Done bool `json:"done"`
	// NewTopic marks a change of subject: memory keeps only the last user
	// message.
	NewTopic bool `json:"newTopic"`
	// Buttons are quick replies the model suggests.
	Buttons []chat.Button `json:"buttons"`
	// UnknownTool is true when the model named a tool outside the allowed
	// set; Tool then holds the name as written and nothing may run it.
	UnknownTool bool `json:"-"`
}

// MarshalJSON renders Tool "" as null and Args as {} when empty, so the
// journal shows the decision in the contract's own shape.
func (d Decision) MarshalJSON() ([]byte, error) {
	type wire struct {
		Say      string          `json:"say"`
		Tool     *string         `json:"tool"`
		Args     json.RawMessage `json:"args"`
		Done     bool            `json:"done"`
		NewTopic bool            `json:"newTopic"`
		Buttons  []chat.Button   `json:"buttons"`
	}
	w := wire{Say: d.Say, Args: d.Args, Done: d.Done, NewTopic: d.NewTopic, Buttons: d.Buttons}
	if d.Tool != "" {
		w.Tool = &d.Tool
	}
	if len(w.Args) == 0 {
		w.Args = json.RawMessage("{}")
	}
	if w.Buttons == nil {
		w.Buttons = []chat.Button{}
	}
	return json.Marshal(w)
}
