package eval

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report for a terminal: a row per scenario with its
// pass^k, every failed step with what was expected and what happened,
// then the metrics.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "suite %s, config %s, k=%d\n\n", r.Suite, r.Config, r.K)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tpass^k\truns passed\tturns\tmodel calls\ttokens\tcost")
	for i, sc := range r.Scenarios {
		turns, calls := 0, 0
		if len(sc.Runs) > 0 {
			turns = len(sc.Runs[0].Turns)
			for _, t := range sc.Runs[0].Turns {
				calls += t.ModelCalls
			}
		}
		c := r.Metrics.PerScenario[i]
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%d\t%d\t%s\n", sc.Name, verdict(sc.PassK), sc.Passed, len(sc.Runs), turns, calls, c.Tokens, money(c.CostUSD))
	}
	tw.Flush()
	for _, sc := range r.Scenarios {
		for n, run := range sc.Runs {
			if run.Pass {
				continue
			}
			fmt.Fprintf(w, "\n%s, run %d:\n", sc.Name, n+1)
			if run.Error != "" {
				fmt.Fprintf(w, "  error: %s\n", run.Error)
			}
			for i, t := range run.Turns {
				for _, f := range t.Failures {
					fmt.Fprintf(w, "  turn %d %q (turn %s, route %s): %s\n", i+1, clip(t.Message), t.TurnID, t.Route, f)
				}
			}
			for _, f := range run.AfterFailures {
				fmt.Fprintf(w, "  after: %s\n", f)
			}
		}
	}
	m := r.Metrics
	cost := money(m.CostUSD)
	if m.CostUnknown {
		cost += " (some calls unpriced)"
	}
	fmt.Fprintf(w, "\ntool selection accuracy %.3f · argument error rate %.3f · unconfirmed claims %d (rate %.3f) · blocked invalid actions %d · duplicate operations %d\n",
		m.ToolSelection, m.ArgErrorRate, m.UnconfirmedClaims, m.UnconfirmedClaimRate, m.BlockedInvalid, m.DuplicateWrites)
	if m.OutcomeRuns > 0 {
		fmt.Fprintf(w, "outcomes in the system of record %d/%d runs\n", m.OutcomesHeld, m.OutcomeRuns)
	}
	fmt.Fprintf(w, "latency p50 %d ms · p95 %d ms · %d turns · %d tokens · cost %s\n", m.LatencyP50MS, m.LatencyP95MS, m.Turns, m.Tokens, cost)
	passed := 0
	for _, sc := range r.Scenarios {
		if sc.PassK {
			passed++
		}
	}
	fmt.Fprintf(w, "%d of %d scenarios passed %d times in a row\n", passed, len(r.Scenarios), r.K)
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func money(v float64) string { return fmt.Sprintf("$%.6f", v) }

// WriteJSON writes the report for machines.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a report WriteJSON wrote.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteHTML writes a single-file report: the metrics, every scenario with
// its runs and per-turn route, the differences of failed steps, each
// turn's journal record, and a link from each turn to its trace page on
// traceBase (a server keeping the same journal; none when empty).
func (r *Report) WriteHTML(path, traceBase string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return htmlReport.Execute(f, struct {
		*Report
		TraceBase string
	}{r, strings.TrimRight(traceBase, "/")})
}

var htmlReport = template.Must(template.New("report").Funcs(template.FuncMap{"money": money, "inc": func(i int) int { return i + 1 }}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>arbiter eval — {{.Suite}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:72rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.pass{color:#0a6b2e;font-weight:600}.fail{color:#b00020;font-weight:600}
code,pre{font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}
</style></head><body>
<h1>{{.Suite}}</h1>
<p>Configuration <code>{{.Config}}</code>, every scenario run {{.K}} times on a fresh store.</p>
<h2>Metrics</h2>
<table><tbody>
<tr><th>tool selection accuracy</th><td>{{printf "%.3f" .Metrics.ToolSelection}}</td></tr>
<tr><th>argument error rate</th><td>{{printf "%.3f" .Metrics.ArgErrorRate}}</td></tr>
<tr><th>unconfirmed claims</th><td>{{.Metrics.UnconfirmedClaims}} ({{printf "%.3f" .Metrics.UnconfirmedClaimRate}})</td></tr>
<tr><th>blocked invalid actions</th><td>{{.Metrics.BlockedInvalid}}</td></tr>
<tr><th>duplicate operations</th><td>{{.Metrics.DuplicateWrites}}</td></tr>
<tr><th>latency p50 / p95</th><td>{{.Metrics.LatencyP50MS}} ms / {{.Metrics.LatencyP95MS}} ms</td></tr>
<tr><th>tokens / cost</th><td>{{.Metrics.Tokens}} / {{money .Metrics.CostUSD}}</td></tr>
</tbody></table>
<h2>Scenarios</h2>
{{range .Scenarios}}<section>
<h3>{{.Name}} — {{if .PassK}}<span class="pass">pass^{{len .Runs}}</span>{{else}}<span class="fail">failed</span>{{end}} ({{.Passed}}/{{len .Runs}} runs)</h3>
{{range $n, $run := .Runs}}<p>Run {{inc $n}}: {{if $run.Pass}}<span class="pass">passed</span>{{else}}<span class="fail">failed</span>{{end}}{{if $run.Error}} — <code>{{$run.Error}}</code>{{end}}{{if $run.DuplicateWrites}}, {{$run.DuplicateWrites}} duplicate writes{{end}}</p>
<table><thead><tr><th>#</th><th>message</th><th>route</th><th>tool</th><th>pending / approval / executed</th><th>vetoes</th><th>reply</th><th>differences</th></tr></thead><tbody>
{{range $i, $t := $run.Turns}}<tr><td>{{if $.TraceBase}}<a href="{{$.TraceBase}}/turns/{{$t.TurnID}}">{{inc $i}}</a>{{else}}{{inc $i}}{{end}}</td><td>{{$t.Message}}</td><td>{{$t.Route}} {{$t.Status}}</td><td>{{$t.Tool}}{{if $t.Args}}<pre>{{printf "%s" $t.Args}}</pre>{{end}}</td><td>{{$t.Pending}} {{$t.Approval}} {{range $t.Executed}}{{.}} {{end}}</td><td>{{range $t.Vetoes}}{{.}} {{end}}</td><td><pre>{{$t.Say}}</pre></td><td>{{range $t.Failures}}<div class="fail">{{.}}</div>{{end}}{{if $t.Trace}}<details><summary>trace</summary><pre>{{printf "%s" $t.Trace}}</pre></details>{{end}}</td></tr>
{{end}}</tbody></table>{{end}}
</section>{{end}}
</body></html>
`))

// WriteComparison prints two reports side by side: each scenario's
// pass^k in both, then the metrics.
func WriteComparison(w io.Writer, a, b *Report, nameA, nameB string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s\t%s\n", nameA, nameB)
	byName := map[string]ScenarioResult{}
	for _, sc := range b.Scenarios {
		byName[sc.Name] = sc
	}
	cell := func(sc ScenarioResult, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%s %d/%d", verdict(sc.PassK), sc.Passed, len(sc.Runs))
	}
	seen := map[string]bool{}
	for _, sc := range a.Scenarios {
		other, ok := byName[sc.Name]
		seen[sc.Name] = true
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sc.Name, cell(sc, true), cell(other, ok))
	}
	for _, sc := range b.Scenarios {
		if !seen[sc.Name] {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", sc.Name, "—", cell(sc, true))
		}
	}
	fmt.Fprintln(tw, "\t\t")
	ma, mb := a.Metrics, b.Metrics
	rows := []struct {
		name string
		a, b string
	}{
		{"tool selection accuracy", fmt.Sprintf("%.3f", ma.ToolSelection), fmt.Sprintf("%.3f", mb.ToolSelection)},
		{"argument error rate", fmt.Sprintf("%.3f", ma.ArgErrorRate), fmt.Sprintf("%.3f", mb.ArgErrorRate)},
		{"unconfirmed claims", fmt.Sprint(ma.UnconfirmedClaims), fmt.Sprint(mb.UnconfirmedClaims)},
		{"blocked invalid actions", fmt.Sprint(ma.BlockedInvalid), fmt.Sprint(mb.BlockedInvalid)},
		{"duplicate operations", fmt.Sprint(ma.DuplicateWrites), fmt.Sprint(mb.DuplicateWrites)},
		{"latency p50 ms", fmt.Sprint(ma.LatencyP50MS), fmt.Sprint(mb.LatencyP50MS)},
		{"latency p95 ms", fmt.Sprint(ma.LatencyP95MS), fmt.Sprint(mb.LatencyP95MS)},
		{"tokens", fmt.Sprint(ma.Tokens), fmt.Sprint(mb.Tokens)},
		{"cost", money(ma.CostUSD), money(mb.CostUSD)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.a, r.b)
	}
	tw.Flush()
}
