package gate

import "github.com/arbiterhq/arbiter/tool"

// Ask is what Decide reads of a call that may run (its tool permitted,
// its arguments valid, its target resolved): the spec that governs it,
// its canonical arguments, and the facts of its turn. The facts that cost
// something to tell are functions, asked only where the answer matters.
type Ask struct {
	Spec tool.Spec
	Args []byte
	// Approved: the call's approvers approved it, and this is its own
	// turn. Confirmed: the user said yes to it as it was stored.
	Approved, Confirmed bool
	// EvidenceInTurn: material of others (forwarded, attached, quoted)
	// came with this message.
	EvidenceInTurn bool
	// OwnWords reports whether the user wrote or pressed something this
	// turn (or just before material that came alone).
	OwnWords func() bool
	// OthersInView reports whether the prompt the model saw held content
	// of others: evidence of any turn, what tools read.
	OthersInView func() bool
	// SensitiveTainted reports whether an argument that says where data
	// goes took its value from content of others (Sensitive, Tainted).
	SensitiveTainted func() bool
}

// Verdict is what becomes of a call.
type Verdict struct {
	// EvidenceOnly: a write asked for by material of others alone, which
	// never asks for an action; refused.
	EvidenceOnly bool
	// Decided: its approvers or the user's yes decided it; it runs as it
	// is.
	Decided bool
	// Approve: only a member of the roles the tool names runs it; the
	// user's yes is not enough.
	Approve bool
	// Confirm is why it waits for the user's yes — "policy",
	// "evidence_in_turn", "untrusted_in_view",
	// "sensitive_from_untrusted" — or "" when it runs at once.
	Confirm string
}

// Decide is the rule for a call that may run, in order: a write with no
// words of the user is refused (the forwarded-link incident) unless its
// approvers approved it in its own turn; an approved call runs; a write
// with approvers waits for them; a call the user confirmed runs; else it
// waits for the user's yes when its policy says so, when a write comes
// with material of others or was proposed while content of others was in
// view, or when a read would send a value taken from that content to where
// an argument says — fetching a link an injection wrote sends whatever
// the link holds to its host.
//
// Written as ifs, not a switch: the mutation run plants its changes in the
// comparisons of an if, never in those of a case clause.
func Decide(a Ask) Verdict {
	writes := a.Spec.Risk.Writes()
	if writes && !a.OwnWords() && !a.Approved {
		return Verdict{EvidenceOnly: true}
	}
	if a.Approved {
		return Verdict{Decided: true}
	}
	if writes && len(a.Spec.Approve) > 0 {
		return Verdict{Approve: true}
	}
	if a.Confirmed {
		return Verdict{Decided: true}
	}
	return Verdict{Confirm: confirmation(a, writes)}
}

func confirmation(a Ask, writes bool) string {
	if a.Spec.Confirm == tool.ConfirmAlways {
		return "policy"
	}
	if writes && a.EvidenceInTurn {
		return "evidence_in_turn"
	}
	if writes && a.OthersInView() {
		return "untrusted_in_view"
	}
	if !writes && string(a.Args) != "{}" && a.SensitiveTainted() {
		return "sensitive_from_untrusted"
	}
	return ""
}
