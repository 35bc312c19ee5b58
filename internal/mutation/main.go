// Command mutation reads the reports of a mutation run (go-gremlins' JSON
// output, one per package) and judges them: it lists every mutant that
// lived and is not declared equivalent, prints each package's figures and,
// as its last line,
//
//	mutation: efficacy=NN.N% killed=K lived=L timed_out=T
//
// and exits 1 when the efficacy is under the threshold. Efficacy is killed
// over killed plus lived, as the tool counts it: mutants that timed out,
// did not compile or that no test reaches are reported apart. The tool
// never runs a mutant of a switch's case clause (its coverage has no block
// for one); those are listed as "not run", for tests of their own.
//
// An equivalent mutant changes nothing a test could observe. The list of
// them (testdata/mutation-equivalent.txt) holds one per line:
//
//	path/file.go:LINE:COL MUTATOR | the source line, trimmed | why it is equivalent
//
// An entry applies only while the line still reads as written; one whose
// line changed is reported stale and no longer excuses anything.
//
// It is .ci/mutation's report step and holds no mutation logic itself.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

// report is the part of a go-gremlins JSON report this command reads.
type report struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	Elapsed float64 `json:"elapsed_time"`
}

// equivalent is one entry of the equivalent-mutant list.
type equivalent struct {
	where  string // path:line:col mutator
	source string
	used   bool
}

type counts struct {
	killed, lived, timedOut, notViable, notCovered, equivalent int
	caseClauses                                                int // not covered: on a case clause
}

func (c counts) efficacy() float64 {
	if c.killed+c.lived == 0 {
		return 100
	}
	return 100 * float64(c.killed) / float64(c.killed+c.lived)
}

func main() {
	equivPath := flag.String("equivalent", "testdata/mutation-equivalent.txt", "the list of equivalent mutants")
	threshold := flag.Float64("threshold", 90, "the lowest efficacy that passes, in percent")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mutation [-equivalent file] [-threshold pct] DIR=REPORT.json ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	equiv, err := readEquivalents(*equivPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		os.Exit(2)
	}
	var total counts
	lines := map[string][]string{}
	for _, arg := range flag.Args() {
		dir, file, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "mutation: %q is not DIR=REPORT.json\n", arg)
			os.Exit(2)
		}
		c, elapsed, err := judge(dir, file, equiv, lines)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutation:", err)
			os.Exit(2)
		}
		fmt.Printf("mutation: %s: efficacy=%.1f%% killed=%d lived=%d timed_out=%d not_viable=%d not_covered=%d (case clauses %d) equivalent=%d in %.0fs\n",
			dir, c.efficacy(), c.killed, c.lived, c.timedOut, c.notViable, c.notCovered, c.caseClauses, c.equivalent, elapsed)
		total.killed += c.killed
		total.lived += c.lived
		total.timedOut += c.timedOut
	}
	for _, e := range sortedEquivalents(equiv) {
		name, line, _ := splitWhere(e.where)
		if _, read := lines[name]; read && !e.used && sourceLine(lines, name, line) != e.source {
			fmt.Printf("mutation: stale equivalent entry (its line changed; it excuses nothing): %s\n", e.where)
		}
	}
	fmt.Printf("mutation: efficacy=%.1f%% killed=%d lived=%d timed_out=%d\n", total.efficacy(), total.killed, total.lived, total.timedOut)
	if total.efficacy() < *threshold {
		os.Exit(1)
	}
}

// judge counts one package's report, printing each mutant that lived.
func judge(dir, file string, equiv map[string]*equivalent, lines map[string][]string) (counts, float64, error) {
	var c counts
	raw, err := os.ReadFile(file)
	if err != nil {
		return c, 0, err
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return c, 0, fmt.Errorf("%s: %w", file, err)
	}
	for _, f := range r.Files {
		name := path.Join(dir, f.FileName)
		for _, m := range f.Mutations {
			switch m.Status {
			case "KILLED":
				c.killed++
			case "TIMED OUT":
				c.timedOut++
			case "NOT VIABLE":
				c.notViable++
			case "NOT COVERED":
				c.notCovered++
				// The tool reads coverage from go test's profile, whose
				// blocks never hold a case clause's expressions: such a
				// mutant is never run, however well its line is tested.
				if src := sourceLine(lines, name, m.Line); strings.HasPrefix(src, "case ") {
					c.caseClauses++
					fmt.Printf("not run (a case clause): %s:%d:%d %s | %s\n", name, m.Line, m.Column, m.Type, src)
				}
			case "LIVED":
				src := sourceLine(lines, name, m.Line)
				where := fmt.Sprintf("%s:%d:%d %s", name, m.Line, m.Column, m.Type)
				if e, ok := equiv[where]; ok && e.source == src {
					e.used = true
					c.equivalent++
					continue
				}
				c.lived++
				fmt.Printf("lived: %s | %s\n", where, src)
			}
		}
	}
	return c, r.Elapsed, nil
}

// sourceLine is line n of file name, trimmed ("" when unreadable); lines
// caches the files read.
func sourceLine(lines map[string][]string, name string, n int) string {
	ls, ok := lines[name]
	if !ok {
		raw, _ := os.ReadFile(name)
		ls = strings.Split(string(raw), "\n")
		lines[name] = ls
	}
	if n < 1 || n > len(ls) {
		return ""
	}
	return strings.TrimSpace(ls[n-1])
}

// readEquivalents reads the equivalent-mutant list; a missing file is an
// empty list.
func readEquivalents(name string) (map[string]*equivalent, error) {
	out := map[string]*equivalent{}
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " | ", 3)
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want \"path:line:col MUTATOR | source line | reason\"", name, n)
		}
		where := strings.Join(strings.Fields(parts[0]), " ")
		if _, _, err := splitWhere(where); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out[where] = &equivalent{where: where, source: strings.TrimSpace(parts[1])}
	}
	return out, sc.Err()
}

// splitWhere checks "path:line:col MUTATOR".
func splitWhere(where string) (string, int, error) {
	pos, mutator, ok := strings.Cut(where, " ")
	if !ok || mutator == "" {
		return "", 0, fmt.Errorf("%q names no mutator", where)
	}
	parts := strings.Split(pos, ":")
	if len(parts) != 3 {
		return "", 0, fmt.Errorf("%q is not path:line:col", pos)
	}
	line, err := strconv.Atoi(parts[1])
	if err != nil {
		return "", 0, fmt.Errorf("%q: line: %w", pos, err)
	}
	if _, err := strconv.Atoi(parts[2]); err != nil {
		return "", 0, fmt.Errorf("%q: column: %w", pos, err)
	}
	return parts[0], line, nil
}

func sortedEquivalents(m map[string]*equivalent) []*equivalent {
	out := make([]*equivalent, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}
