package eval

import (
	"slices"
)

// Metrics are seed 003's measures of whether an agent works, over every
// turn of every run, computed from the journal.
type Metrics struct {
	Turns int `json:"turns"`
	// ToolSelection is the share of turns that named a tool (or none)
	// whose journal shows that choice.
	ToolSelection float64 `json:"tool_selection_accuracy"`
	// ArgErrorRate is the share of model-decided turns with an output
	// that broke a schema.
	ArgErrorRate float64 `json:"argument_error_rate"`
	// UnconfirmedClaims counts replies the server held back because they
	// claimed an action no tool confirmed; UnconfirmedClaimRate is their
	// share of turns.
	UnconfirmedClaims    int     `json:"unconfirmed_claims"`
	UnconfirmedClaimRate float64 `json:"unconfirmed_claim_rate"`
	// BlockedInvalid counts calls the server vetoed.
	BlockedInvalid int `json:"blocked_invalid_actions"`
	// DuplicateWrites counts writes repeated with the same arguments in a
	// run.
	DuplicateWrites int `json:"duplicate_operations"`
	// OutcomeRuns counts the runs whose scenario checks the backend
	// afterwards (after:); OutcomesHeld those whose backend held what
	// they expected — the customer got the change promised.
	OutcomeRuns  int     `json:"outcome_runs"`
	OutcomesHeld int     `json:"outcomes_held"`
	LatencyP50MS int64   `json:"latency_p50_ms"`
	LatencyP95MS int64   `json:"latency_p95_ms"`
	Tokens       int     `json:"tokens"`
	CostUSD      float64 `json:"cost_usd"`
	CostUnknown  bool    `json:"cost_unknown,omitempty"`
	// PerScenario are the tokens and cost of one run of each scenario
	// (the mean over its runs).
	PerScenario []ScenarioCost `json:"per_scenario"`
}

// ScenarioCost is what one run of a scenario cost on average.
type ScenarioCost struct {
	Name    string  `json:"name"`
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

func computeMetrics(rep *Report) Metrics {
	var m Metrics
	var expected, right, decided, argErrors int
	var durations []int64
	for _, sc := range rep.Scenarios {
		var cost ScenarioCost
		cost.Name = sc.Name
		for _, run := range sc.Runs {
			m.DuplicateWrites += run.DuplicateWrites
			if run.AfterChecks > 0 {
				m.OutcomeRuns++
				if len(run.AfterFailures) == 0 && run.Error == "" {
					m.OutcomesHeld++
				}
			}
			for _, t := range run.Turns {
				m.Turns++
				durations = append(durations, t.DurationMS)
				m.Tokens += t.Tokens
				m.CostUSD += t.CostUSD
				m.CostUnknown = m.CostUnknown || t.CostUnknown
				cost.Tokens += t.Tokens
				cost.CostUSD += t.CostUSD
				m.BlockedInvalid += len(t.Vetoes)
				if t.Review == "unconfirmed_claim" {
					m.UnconfirmedClaims++
				}
				if t.ToolExpected {
					expected++
					if t.ToolRight {
						right++
					}
				}
				if t.ModelCalls > 0 {
					decided++
					if t.ArgErrors > 0 {
						argErrors++
					}
				}
			}
		}
		if n := len(sc.Runs); n > 0 {
			cost.Tokens /= n
			cost.CostUSD /= float64(n)
		}
		m.PerScenario = append(m.PerScenario, cost)
	}
	m.ToolSelection = 1 // nothing expected, nothing missed
	if expected > 0 {
		m.ToolSelection = ratio(right, expected)
	}
	m.ArgErrorRate = ratio(argErrors, decided)
	m.UnconfirmedClaimRate = ratio(m.UnconfirmedClaims, m.Turns)
	slices.Sort(durations)
	m.LatencyP50MS, m.LatencyP95MS = quantile(durations, 0.50), quantile(durations, 0.95)
	return m
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
