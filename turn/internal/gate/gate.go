// Package gate holds the checks a proposed tool call, and the reply
// around it, pass before they take effect, as functions of what they read
// — the caller's rights, the arguments and schema, the texts the model
// was shown, what the turn's calls returned — with no turn behind them, so
// that each is read and table-tested on its own:
//
//   - Permitted and Matches: a caller's role, connected integrations and
//     scopes against a tool;
//   - Decide: whether a permitted call is refused (evidence alone asked
//     for a write), runs, waits for its approvers or for the user's yes;
//   - Args: arguments against the tool's schema, in canonical form, and
//     Hash, the content key of a call;
//   - Tainted and Sensitive: which arguments came from content of others
//     (evidence, what tools read) rather than the user's own words, and
//     which of them say where data goes or what unlocks it;
//   - Approves, MayDecide, Expired and Decided: who decides an action
//     that waits for approvers (four eyes), until when, and how it reads
//     decided;
//   - Once: a write run at most once per idempotency key, over the
//     store's execution records;
//   - Claims: what a reply asserts against the calls that confirm it;
//   - Inert: a value as a confirmation shows it, unable to fake its end.
//
// The engine (package turn) gathers the inputs from the turn — the
// caller, the registered tool, the messages in view, the calls made —
// and decides what a finding does: a veto, a confirmation, a hand-off.
package gate
