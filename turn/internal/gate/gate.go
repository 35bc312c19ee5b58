// Package gate holds the checks a proposed tool call passes before it
// runs, as functions of what they read — the arguments, the schema, the
// texts the model was shown — with no turn behind them, so that each is
// read and table-tested on its own:
//
//   - Args: arguments against the tool's schema, in canonical form, and
//     Hash, the content key of a call;
//   - Tainted and Sensitive: which arguments came from content of others
//     (evidence, what tools read) rather than the user's own words, and
//     which of them say where data goes or what unlocks it.
//
// The engine (package turn) gathers the inputs from the turn — the
// registered tool, the messages in view — and decides what a finding
// does: a veto, a confirmation, a label on it.
package gate
