package gate

import (
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

// The rule for a call that may run, case by case, and which costly facts
// it asks for.
func TestDecide(t *testing.T) {
	read := tool.Spec{Name: "fetch", Policy: tool.Policy{Risk: tool.RiskRead}}
	write := tool.Spec{Name: "add", Policy: tool.Policy{Risk: tool.RiskWriteSafe}}
	always := tool.Spec{Name: "pay", Policy: tool.Policy{Risk: tool.RiskWriteFull, Confirm: tool.ConfirmAlways}}
	approvers := tool.Spec{Name: "refund", Policy: tool.Policy{Risk: tool.RiskWriteFull, Approve: []string{"lead"}}}
	readAlways := tool.Spec{Name: "peek", Policy: tool.Policy{Risk: tool.RiskRead, Confirm: tool.ConfirmAlways}}
	type facts struct{ own, inView, tainted bool }
	cases := []struct {
		name                string
		spec                tool.Spec
		args                string
		approved, confirmed bool
		evidence            bool
		facts               facts
		want                Verdict
		asks                string // the facts asked, in order: o(wn words), v(iew), t(ainted)
	}{
		{"a write of the user's", write, `{"a":1}`, false, false, false, facts{own: true}, Verdict{}, "ov"},
		{"a write from material alone", write, `{"a":1}`, false, false, true, facts{}, Verdict{EvidenceOnly: true}, "o"},
		{"an approved write with no words", approvers, `{}`, true, false, false, facts{}, Verdict{Decided: true}, "o"},
		{"a write with approvers", approvers, `{}`, false, false, false, facts{own: true}, Verdict{Approve: true}, "o"},
		{"approvers, though the user said yes", approvers, `{}`, false, true, false, facts{own: true}, Verdict{Approve: true}, "o"},
		{"a write the user confirmed", always, `{}`, false, true, true, facts{own: true, inView: true}, Verdict{Decided: true}, "o"},
		{"a confirmed read", read, `{"u":"x"}`, false, true, false, facts{tainted: true}, Verdict{Decided: true}, ""},
		{"policy", always, `{}`, false, false, true, facts{own: true, inView: true}, Verdict{Confirm: "policy"}, "o"},
		{"a read's policy", readAlways, `{"u":"x"}`, false, false, false, facts{tainted: true}, Verdict{Confirm: "policy"}, ""},
		{"a write with material", write, `{}`, false, false, true, facts{own: true, inView: true}, Verdict{Confirm: "evidence_in_turn"}, "o"},
		{"a write with others in view", write, `{}`, false, false, false, facts{own: true, inView: true}, Verdict{Confirm: "untrusted_in_view"}, "ov"},
		{"a read sending a value of others", read, `{"u":"x"}`, false, false, true, facts{inView: true, tainted: true}, Verdict{Confirm: "sensitive_from_untrusted"}, "t"},
		{"a read of the user's values", read, `{"u":"x"}`, false, false, false, facts{inView: true}, Verdict{}, "t"},
		{"a read with no arguments", read, `{}`, false, false, true, facts{inView: true, tainted: true}, Verdict{}, ""},
	}
	for _, c := range cases {
		asked := ""
		ask := func(letter string, v bool) func() bool { return func() bool { asked += letter; return v } }
		got := Decide(Ask{
			Spec: c.spec, Args: []byte(c.args), Approved: c.approved, Confirmed: c.confirmed, EvidenceInTurn: c.evidence,
			OwnWords: ask("o", c.facts.own), OthersInView: ask("v", c.facts.inView), SensitiveTainted: ask("t", c.facts.tainted),
		})
		if got != c.want {
			t.Errorf("%s: Decide = %+v, want %+v", c.name, got, c.want)
		}
		if asked != c.asks {
			t.Errorf("%s: asked %q, want %q", c.name, asked, c.asks)
		}
	}
}
