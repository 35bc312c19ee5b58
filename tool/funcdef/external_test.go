package funcdef

// Tests against third-party data kept in testdata/external (see the README
// there): the function definitions and ground-truth calls of the Berkeley
// Function Calling Leaderboard and the tool schemas and reference actions of
// tau2-bench. Each file is read and parsed once; the tests share the result.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

var (
	externalDir = filepath.Join("..", "..", "testdata", "external")
	bfclDir     = filepath.Join(externalDir, "bfcl", "berkeley-function-call-leaderboard", "bfcl_eval", "data")
	tau2Dir     = filepath.Join(externalDir, "tau2")
)

// bfclCategory is one single-turn question file.
type bfclCategory struct {
	name    string
	lang    string
	live    bool
	answers bool // has a possible_answer file
	funcs   int  // function definitions, as the data README counts them
	calls   int  // ground-truth calls
}

var bfclCategories = []bfclCategory{
	{"simple_python", LangPython, false, true, 400, 400},
	{"simple_java", LangJava, false, true, 100, 100},
	{"simple_javascript", LangJavaScript, false, true, 50, 50},
	{"multiple", LangPython, false, true, 557, 200},
	{"parallel", LangPython, false, true, 200, 540},
	{"parallel_multiple", LangPython, false, true, 520, 607},
	{"irrelevance", LangPython, false, false, 240, 0},
	{"live_simple", LangPython, true, true, 258, 258},
	{"live_multiple", LangPython, true, true, 4178, 1053},
	{"live_parallel", LangPython, true, true, 18, 39},
	{"live_parallel_multiple", LangPython, true, true, 95, 55},
	{"live_relevance", LangPython, true, false, 44, 0},
}

// bfclFunc is one function definition of one question entry.
type bfclFunc struct {
	cat, lang, entry string
	raw              json.RawMessage
	def              Def
	schema           *tool.Schema
	err              error  // from Parse, CompileSchema or a panic
	base             []byte // the first ground-truth call that validated, if any
}

// bfclCall is one ground-truth call made concrete, and its validation.
type bfclCall struct {
	cat, entry, name string
	fn               *bfclFunc // nil when the entry defines no such function
	args             []byte
	err              error
}

type bfclData struct {
	funcs []*bfclFunc
	calls []*bfclCall
}

var (
	bfclOnce   sync.Once
	bfclLoaded *bfclData
	bfclErr    error
)

// loadBFCL reads, maps and compiles every definition and validates every
// ground-truth call, once for all tests.
func loadBFCL(t *testing.T) *bfclData {
	t.Helper()
	bfclOnce.Do(func() { bfclLoaded, bfclErr = readBFCL() })
	if bfclErr != nil {
		t.Fatalf("BFCL data: %v", bfclErr)
	}
	return bfclLoaded
}

func readBFCL() (*bfclData, error) {
	d := &bfclData{}
	for _, cat := range bfclCategories {
		byEntry := make(map[string]map[string]*bfclFunc)
		err := eachLine(filepath.Join(bfclDir, "BFCL_v4_"+cat.name+".json"), func(line []byte) error {
			var q struct {
				ID       string            `json:"id"`
				Function []json.RawMessage `json:"function"`
			}
			if err := json.Unmarshal(line, &q); err != nil {
				return err
			}
			byName := make(map[string]*bfclFunc)
			for _, raw := range q.Function {
				var head struct{ Name string }
				if err := json.Unmarshal(raw, &head); err != nil {
					return fmt.Errorf("%s: %v", q.ID, err)
				}
				byName[head.Name] = &bfclFunc{cat: cat.name, lang: cat.lang, entry: q.ID, raw: raw}
				d.funcs = append(d.funcs, byName[head.Name])
			}
			byEntry[q.ID] = byName
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !cat.answers {
			continue
		}
		err = eachLine(filepath.Join(bfclDir, "possible_answer", "BFCL_v4_"+cat.name+".json"), func(line []byte) error {
			var a struct {
				ID          string                       `json:"id"`
				GroundTruth []map[string]json.RawMessage `json:"ground_truth"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				return err
			}
			for _, call := range a.GroundTruth {
				for name, params := range call {
					args, err := concreteCall(params)
					if err != nil {
						return fmt.Errorf("%s: %v", a.ID, err)
					}
					d.calls = append(d.calls, &bfclCall{cat: cat.name, entry: a.ID, name: name, fn: byEntry[a.ID][name], args: args})
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	parallel(len(d.funcs), func(i int) {
		f := d.funcs[i]
		f.err = recovered(func() (err error) {
			f.def, err = Parse(f.raw, Options{Language: f.lang})
			return err
		})
	})
	// Many entries repeat a definition; each distinct schema is compiled
	// once and shared (a Schema is immutable).
	schemas := make(map[string]int)
	var distinct []*bfclFunc
	for _, f := range d.funcs {
		if f.err == nil {
			if _, seen := schemas[string(f.def.InputSchema)]; !seen {
				schemas[string(f.def.InputSchema)] = len(distinct)
				distinct = append(distinct, f)
			}
		}
	}
	parallel(len(distinct), func(i int) {
		f := distinct[i]
		f.err = recovered(func() (err error) {
			f.schema, err = tool.CompileSchema(f.def.Name, f.def.InputSchema)
			return err
		})
	})
	for _, f := range d.funcs {
		if f.err == nil && f.schema == nil {
			src := distinct[schemas[string(f.def.InputSchema)]]
			f.schema, f.err = src.schema, src.err
		}
	}
	parallel(len(d.calls), func(i int) {
		c := d.calls[i]
		if c.fn == nil || c.fn.schema == nil {
			c.err = errors.New("no loaded definition")
			return
		}
		c.err = c.fn.schema.Validate(c.name, c.args)
	})
	for _, c := range d.calls { // in file order, so "first" is stable
		if c.err == nil && c.fn.base == nil {
			c.fn.base = c.args
		}
	}
	return d, nil
}

// recovered runs fn, turning a panic into an error.
func recovered(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

// loadFunc maps and compiles one definition.
func loadFunc(raw []byte, lang string) (def Def, s *tool.Schema, err error) {
	err = recovered(func() error {
		if def, err = Parse(raw, Options{Language: lang}); err != nil {
			return err
		}
		s, err = tool.CompileSchema(def.Name, def.InputSchema)
		return err
	})
	return def, s, err
}

// concreteCall builds the arguments a ground-truth entry stands for. Each
// parameter maps to a list of acceptable values, "" marking that it may be
// left out. The rule: take the first option that is not "" and leave the
// parameter out only when there is none. Inside an object value every
// member is again such a list (that is how the data writes nested objects);
// a member that is not a list is taken as it is.
func concreteCall(params json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(concreteObject(v))
}

func concreteObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		options, isList := v.([]any)
		if !isList {
			out[k] = concreteValue(v)
			continue
		}
		for _, o := range options {
			if o != "" {
				out[k] = concreteValue(o)
				break
			}
		}
	}
	return out
}

func concreteValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return concreteObject(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = concreteValue(e)
		}
		return out
	}
	return v
}

func TestBFCLDefinitionsLoad(t *testing.T) {
	d := loadBFCL(t)
	perCat := make(map[string]int)
	loaded, rejected := 0, 0
	var rejections []string
	for _, f := range d.funcs {
		perCat[f.cat]++
		var ute *UnsupportedTypeError
		switch {
		case f.err == nil:
			loaded++
		case errors.As(f.err, &ute):
			rejected++
			rejections = append(rejections, fmt.Sprintf("%s %s %s %q", f.entry, ute.Function, ute.Path, ute.Type))
		default:
			t.Errorf("%s: %s: %v", f.cat, f.entry, f.err)
		}
	}
	for _, cat := range bfclCategories {
		if perCat[cat.name] != cat.funcs {
			t.Errorf("%s: %d definitions, want %d", cat.name, perCat[cat.name], cat.funcs)
		}
	}
	t.Logf("BFCL definitions: %d in all, %d loaded, %d rejected as unsupported: %v", len(d.funcs), loaded, rejected, rejections)
	if len(d.funcs) != 6660 || loaded != 6659 || rejected != 1 {
		t.Errorf("definitions: %d in all, %d loaded, %d rejected; want 6660, 6659, 1", len(d.funcs), loaded, rejected)
	}
	wantRejected := `simple_javascript_23 createAuthToken /properties/options/properties/issuer ""`
	if len(rejections) != 1 || rejections[0] != wantRejected {
		t.Errorf("rejected %v, want [%s]", rejections, wantRejected)
	}
}

// bfclResidue lists the non-live entries whose ground truth does not
// validate, with the reason found by reading the data. In each case the
// ground truth disagrees with its own definition; the validator is right.
var bfclResidue = map[string]string{
	"simple_python_307":    "venue is a string; the ground truth passes true",
	"simple_javascript_23": "definition rejected: options.issuer has an empty type",
	"parallel_152":         "mod is a float with no null default; the ground truth passes null",
	"parallel_multiple_12": "passes permeability, which the definition does not declare",
	"parallel_multiple_21": "x and y are arrays; the ground truth passes Python expressions as strings",
	"parallel_multiple_26": "passes type, which the definition does not declare",
	"parallel_multiple_94": "elements are integers; the ground truth sorts strings",
}

// bfclLiveFailures pins, per live category, the entries whose ground truth
// does not validate. The reasons, read from the data: values outside the
// declared enum ("dontcare", "N/A", "Any", "all", a translated phrase),
// booleans for flags declared as strings, "dontcare" for integers, and
// calls that leave out a required argument or pass an undeclared one.
var bfclLiveFailures = map[string]string{
	"live_simple": "106-63-0 112-68-0 141-94-0 142-94-1 143-95-0 144-95-1 145-95-2 146-95-3 147-95-4 " +
		"148-95-5 149-95-6 150-95-7 151-95-8 152-95-9 153-95-10 154-95-11 155-95-12 156-95-13 " +
		"157-95-14 158-95-15 159-95-16 160-95-17",
	"live_multiple": "189-83-0 190-84-0 301-131-0 302-131-1 303-131-2 304-131-3 306-131-5 307-131-6 " +
		"308-131-7 338-133-2 342-133-6 343-133-7 344-133-8 345-133-9 350-133-14 351-133-15 " +
		"352-133-16 354-133-18 414-141-3 416-141-5 417-141-6 421-141-10 424-141-13 427-141-16 " +
		"431-141-20 433-141-22 507-149-4 552-153-1 553-153-2 595-158-1 596-158-2 731-167-2 " +
		"732-167-3 733-167-4 734-167-5 735-167-6 736-167-7 737-167-8 750-169-5 756-169-11 " +
		"835-178-10 848-179-2 851-179-5 862-181-3 87-38-4 871-182-8 947-197-0 956-203-0 964-207-0",
	"live_parallel":          "15-11-0",
	"live_parallel_multiple": "2-2-0",
}

func TestBFCLGroundTruth(t *testing.T) {
	d := loadBFCL(t)
	type tally struct{ calls, ok int }
	tallies := make(map[string]*tally)
	failed := make(map[string]map[string]bool) // category -> entry ids
	for _, c := range d.calls {
		tl := tallies[c.cat]
		if tl == nil {
			tl = &tally{}
			tallies[c.cat] = tl
		}
		tl.calls++
		if c.err == nil {
			tl.ok++
		} else if failed[c.cat] == nil {
			failed[c.cat] = map[string]bool{c.entry: true}
		} else {
			failed[c.cat][c.entry] = true
		}
	}
	var live, nonLive tally
	var report []string
	for _, cat := range bfclCategories {
		if !cat.answers {
			continue
		}
		tl := tallies[cat.name]
		if tl == nil || tl.calls != cat.calls {
			t.Errorf("%s: ground-truth calls %v, want %d", cat.name, tl, cat.calls)
			continue
		}
		sum := &nonLive
		if cat.live {
			sum = &live
		}
		sum.calls += tl.calls
		sum.ok += tl.ok
		report = append(report, fmt.Sprintf("%s %d/%d (%.1f%%)", cat.name, tl.ok, tl.calls, 100*float64(tl.ok)/float64(tl.calls)))
	}
	t.Logf("BFCL ground truth validating: %s", strings.Join(report, ", "))
	t.Logf("non-live %d/%d (%.2f%%), live %d/%d (%.2f%%)", nonLive.ok, nonLive.calls, 100*float64(nonLive.ok)/float64(nonLive.calls),
		live.ok, live.calls, 100*float64(live.ok)/float64(live.calls))
	if nonLive.ok*100 < nonLive.calls*99 {
		t.Errorf("non-live ground truth: %d/%d validate, want at least 99%%", nonLive.ok, nonLive.calls)
	}
	residue := make(map[string]bool)
	for _, cat := range bfclCategories {
		if !cat.live {
			maps.Copy(residue, failed[cat.name])
			continue
		}
		want := make(map[string]string)
		for _, suffix := range strings.Fields(bfclLiveFailures[cat.name]) {
			want[cat.name+"_"+suffix] = ""
		}
		checkPinned(t, cat.name, failed[cat.name], want, d.calls)
	}
	checkPinned(t, "non-live", residue, bfclResidue, d.calls)
}

// checkPinned reports entries that newly fail, with their calls and
// errors, and pinned entries that now pass.
func checkPinned(t *testing.T, what string, got map[string]bool, want map[string]string, calls []*bfclCall) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if _, pinned := want[id]; pinned {
			continue
		}
		t.Errorf("%s: %s fails and is not pinned", what, id)
		for _, c := range calls {
			if c.entry == id && c.err != nil {
				t.Logf("  %s %.300s: %v", c.name, c.args, c.err)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if !got[id] {
			t.Errorf("%s: %s is pinned as failing but validates", what, id)
		}
	}
}

// mutant is a call derived from a validating ground-truth call that must
// be rejected.
type mutant struct {
	kind string
	fn   *bfclFunc
	args []byte
}

// Mutant kinds.
const (
	mutMissingRequired = "missing-required"
	mutUnknownParam    = "unknown-param"
	mutWrongType       = "wrong-type"
	mutOutOfEnum       = "out-of-enum"
	mutArrayArgs       = "array-args"
	mutStringArgs      = "string-args"
	mutNullArgs        = "null-args"
	mutOversized       = "oversized"
)

var mutantKinds = []string{mutMissingRequired, mutUnknownParam, mutWrongType, mutOutOfEnum,
	mutArrayArgs, mutStringArgs, mutNullArgs, mutOversized}

func TestBFCLMutants(t *testing.T) {
	d := loadBFCL(t)
	var mutants []mutant
	defs := 0
	for _, f := range d.funcs {
		if f.base == nil {
			continue
		}
		defs++
		ms, err := mutate(f)
		if err != nil {
			t.Fatalf("%s %s: %v", f.entry, f.def.Name, err)
		}
		mutants = append(mutants, ms...)
	}
	errs := make([]error, len(mutants))
	parallel(len(mutants), func(i int) {
		errs[i] = mutants[i].fn.schema.Validate(mutants[i].fn.def.Name, mutants[i].args)
	})
	count := make(map[string]int)
	bad := 0
	for i, m := range mutants {
		count[m.kind]++
		var ae *tool.ArgsError
		if !errors.As(errs[i], &ae) {
			if bad++; bad <= 20 {
				t.Errorf("%s mutant of %s (%s) %.300s: got %v, want *ArgsError", m.kind, m.fn.def.Name, m.fn.entry, m.args, errs[i])
			}
		}
	}
	var report []string
	for _, k := range mutantKinds {
		report = append(report, fmt.Sprintf("%s %d", k, count[k]))
		if count[k] == 0 {
			t.Errorf("no %s mutants", k)
		}
	}
	t.Logf("BFCL mutants of %d definitions: %d in all, %d not rejected; %s", defs, len(mutants), bad, strings.Join(report, ", "))
	for _, k := range []string{mutUnknownParam, mutArrayArgs, mutStringArgs, mutNullArgs, mutOversized} {
		if count[k] != defs {
			t.Errorf("%s mutants: %d, want one per definition (%d)", k, count[k], defs)
		}
	}
}

// mutate derives the invalid calls of one definition from its validating
// ground-truth call: each required argument left out in turn; an unknown
// argument added; each typed argument replaced by a value of a JSON type
// its schema does not admit; each enum argument (or array of enum items)
// given a value outside the enum; the arguments as an array, a string and
// null; and the valid call padded past DefaultMaxArgsBytes.
func mutate(f *bfclFunc) ([]mutant, error) {
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := decodeNumbers(f.def.InputSchema, &schema); err != nil {
		return nil, err
	}
	var base map[string]any
	if err := decodeNumbers(f.base, &base); err != nil {
		return nil, err
	}
	var out []mutant
	add := func(kind string, args any) {
		data, err := json.Marshal(args)
		if err != nil {
			panic(err)
		}
		out = append(out, mutant{kind, f, data})
	}
	with := func(name string, v any) map[string]any {
		m := maps.Clone(base)
		m[name] = v
		return m
	}
	for _, name := range schema.Required {
		if _, ok := base[name]; ok {
			m := maps.Clone(base)
			delete(m, name)
			add(mutMissingRequired, m)
		}
	}
	unknown := "zz_unknown_param"
	if _, declared := schema.Properties[unknown]; declared {
		return nil, fmt.Errorf("%s declares %s", f.def.Name, unknown)
	}
	add(mutUnknownParam, with(unknown, json.Number("1")))
	for _, name := range slices.Sorted(maps.Keys(base)) {
		prop := schema.Properties[name]
		if accepted := acceptedKinds(prop); accepted != nil {
			for _, c := range probeValues {
				if !overlaps(c.kinds, accepted) {
					add(mutWrongType, with(name, c.v))
					break
				}
			}
		}
		if enum, ok := prop["enum"].([]any); ok {
			add(mutOutOfEnum, with(name, outOfEnum(enum)))
		} else if items, ok := prop["items"].(map[string]any); ok {
			if enum, ok := items["enum"].([]any); ok {
				add(mutOutOfEnum, with(name, []any{outOfEnum(enum)}))
			}
		}
	}
	add(mutArrayArgs, []any{base})
	add(mutStringArgs, "zz-not-an-object")
	add(mutNullArgs, nil)
	data, _ := json.Marshal(base)
	out = append(out, mutant{mutOversized, f, append([]byte("{"+strings.Repeat(" ", tool.DefaultMaxArgsBytes)), data[1:]...)})
	return out, nil
}

// probeValues are values of each JSON type, with the types each one has.
var probeValues = []struct {
	v     any
	kinds []string
}{
	{true, []string{"boolean"}},
	{map[string]any{"zz": json.Number("1")}, []string{"object"}},
	{[]any{json.Number("1")}, []string{"array"}},
	{"zz-wrong-type", []string{"string"}},
	{json.Number("7"), []string{"integer", "number"}},
	{json.Number("0.5"), []string{"number"}},
	{nil, []string{"null"}},
}

// acceptedKinds lists the JSON types a property schema admits, or nil when
// it admits any type or the test cannot tell.
func acceptedKinds(s map[string]any) []string {
	if s == nil || s["anyOf"] != nil || s["oneOf"] != nil || s["allOf"] != nil {
		return nil
	}
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, e.(string))
		}
		return out
	}
	if enum, ok := s["enum"].([]any); ok {
		var out []string
		for _, v := range enum {
			out = append(out, probeKind(v))
		}
		return out
	}
	return nil
}

// probeKind is the JSON type of a value, "integer" for integral numbers.
func probeKind(v any) string {
	if n, ok := v.(json.Number); ok {
		if _, err := n.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return jsonKind(v)
}

func overlaps(kinds, accepted []string) bool {
	for _, k := range kinds {
		if slices.Contains(accepted, k) {
			return true
		}
	}
	return false
}

// outOfEnum picks a value outside enum, of a type the enum uses when it can.
func outOfEnum(enum []any) any {
	kinds := make([]string, 0, len(enum))
	for _, v := range enum {
		kinds = append(kinds, probeKind(v))
	}
	var fallback any
	for _, c := range []any{"zz-not-in-enum", json.Number("987654321"), json.Number("0.5"), false, true} {
		if containsValue(enum, c) {
			continue
		}
		if slices.Contains(kinds, probeKind(c)) || (probeKind(c) == "integer" && slices.Contains(kinds, "number")) {
			return c
		}
		if fallback == nil {
			fallback = c
		}
	}
	return fallback
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// tau2Tool is one entry of derived/<domain>/tools.json.
type tau2Tool struct {
	Name     string `json:"name"`
	ToolType string `json:"tau2_tool_type"`
	def      Def
	schema   *tool.Schema
}

func loadTau2Tools(t *testing.T, domain string) map[string]*tau2Tool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tau2Dir, "derived", domain, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s tools: %v", domain, err)
	}
	tools := make(map[string]*tau2Tool)
	for _, raw := range file.Tools {
		td := &tau2Tool{}
		if err := json.Unmarshal(raw, td); err != nil {
			t.Fatalf("%s tools: %v", domain, err)
		}
		if td.def, td.schema, err = loadFunc(raw, LangPython); err != nil {
			t.Fatalf("%s tool %s: %v", domain, td.Name, err)
		}
		tools[td.Name] = td
	}
	return tools
}

func TestTau2ReferenceActions(t *testing.T) {
	want := map[string]int{"airline": 142, "retail": 550}
	total := 0
	for _, domain := range []string{"airline", "retail"} {
		tools := loadTau2Tools(t, domain)
		data, err := os.ReadFile(filepath.Join(tau2Dir, "data", "tau2", "domains", domain, "tasks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tasks []struct {
			ID       string `json:"id"`
			Criteria *struct {
				Actions []struct {
					ActionID  string          `json:"action_id"`
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"actions"`
			} `json:"evaluation_criteria"`
		}
		if err := json.Unmarshal(data, &tasks); err != nil {
			t.Fatalf("%s tasks: %v", domain, err)
		}
		n := 0
		for _, task := range tasks {
			if task.Criteria == nil {
				continue
			}
			for _, a := range task.Criteria.Actions {
				n++
				td := tools[a.Name]
				if td == nil {
					t.Errorf("%s task %s action %s: no tool %s", domain, task.ID, a.ActionID, a.Name)
					continue
				}
				if err := td.schema.Validate(a.Name, a.Arguments); err != nil {
					t.Errorf("%s task %s action %s: %v", domain, task.ID, a.ActionID, err)
				}
			}
		}
		t.Logf("tau2 %s: %d reference actions validated against %d tools", domain, n, len(tools))
		if n != want[domain] {
			t.Errorf("%s: %d reference actions, want %d", domain, n, want[domain])
		}
		total += n
	}
	if total != 692 {
		t.Errorf("%d reference actions, want 692", total)
	}
}

func TestTau2ToolRisk(t *testing.T) {
	want := map[string]map[string]int{ // domain -> tool type -> tools
		"airline": {"READ": 6, "WRITE": 6, "GENERIC": 2},
		"retail":  {"READ": 7, "WRITE": 7, "GENERIC": 2},
		"mock":    {"READ": 1, "WRITE": 2, "GENERIC": 1},
	}
	for domain, wantTypes := range want {
		got := make(map[string]int)
		var registered []tool.Tool
		for _, td := range loadTau2Tools(t, domain) {
			got[td.ToolType]++
			risk, err := ParseRisk(td.ToolType)
			switch td.ToolType {
			case "READ":
				if err != nil || risk != tool.RiskRead {
					t.Errorf("%s %s: READ gives %q, %v; want read", domain, td.Name, risk, err)
				}
			case "WRITE":
				if err != nil || !risk.Writes() {
					t.Errorf("%s %s: WRITE gives %q, %v; want a write risk", domain, td.Name, risk, err)
				}
			default: // GENERIC and THINK say nothing about side effects
				if err == nil {
					t.Errorf("%s %s: %s gives %q, want an error", domain, td.Name, td.ToolType, risk)
				}
				continue
			}
			spec := td.def.Spec(risk)
			if spec.Risk.Writes() != (td.ToolType == "WRITE") || (spec.Confirm == tool.ConfirmAlways) != spec.Risk.Writes() {
				t.Errorf("%s %s (%s): spec risk %s, confirm %s", domain, td.Name, td.ToolType, spec.Risk, spec.Confirm)
			}
			registered = append(registered, funcDefTool{spec})
		}
		for typ, n := range wantTypes {
			if got[typ] != n {
				t.Errorf("%s: %d %s tools, want %d", domain, got[typ], typ, n)
			}
		}
		if _, err := tool.NewRegistry(registered...); err != nil {
			t.Errorf("%s: %v", domain, err)
		}
	}
}

// eachLine calls fn with every non-empty line of a JSON Lines file.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", filepath.Base(path), n, err)
		}
	}
	return sc.Err()
}

// parallel runs fn(0..n-1) on every CPU.
func parallel(n int, fn func(int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
