package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// argumentKeys are the members of the third-party catalogs that hold
// argument values: calls' arguments (BFCL's ground truth, tau2's reference
// actions, AgentDojo's ground-truth calls) and the values schemas offer.
var argumentKeys = map[string]bool{"ground_truth": true, "arguments": true, "args": true, "enum": true, "default": true}

// catalogValues returns every argument value of the JSON and JSON Lines
// files under dir, numbers as written, and whether each was a number.
func catalogValues(t *testing.T, dir string) map[string]bool {
	t.Helper()
	values := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs := [][]byte{raw}
		if !json.Valid(raw) { // JSON Lines
			docs = nil
			sc := bufio.NewScanner(bytes.NewReader(raw))
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				docs = append(docs, bytes.Clone(sc.Bytes()))
			}
		}
		for _, doc := range docs {
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) != nil {
				continue
			}
			collectArguments(v, false, values)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return values
}

func collectArguments(v any, inArgs bool, out map[string]bool) {
	switch x := v.(type) {
	case string:
		if _, seen := out[x]; inArgs && !seen {
			out[x] = false
		}
	case json.Number:
		if inArgs {
			out[x.String()] = true
		}
	case []any:
		for _, e := range x {
			collectArguments(e, inArgs, out)
		}
	case map[string]any:
		for k, e := range x {
			collectArguments(e, inArgs || argumentKeys[k], out)
		}
	}
}

// What a date, a time or an amount looks like, for the count below.
var (
	dateForms   = regexp.MustCompile(`^(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|(19|20)\d{6})([ T].*)?$`)
	timeForms   = regexp.MustCompile(`(?i)^\d{1,2}(:\d{2}){1,2}(\.\d+)?( ?[ap]\.?m\.?)?( ?[a-z]{1,5}| ?[+-]\d{2}:?\d{2}|z)?$`)
	amountForms = regexp.MustCompile(`^[-+]?[$€£¥₽]? ?\d{1,3}([ ,.' ]\d{3})*([.,]\d+)?( ?[$€£¥₽a-zA-Z]{1,3})?$|^[-+]?\d+([.,]\d+)?$`)
)

// The value classes of the provenance guard on every argument value of the
// third-party catalogs (BFCL, tau2, AgentDojo): how many values each class
// takes, and how many dates, times and amounts are taken for a phone
// number, an account or a card — which must be none.
func TestValueClassesOnExternalCatalogs(t *testing.T) {
	root := filepath.Join("..", "..", "..", "testdata", "external")
	counts := map[valueClass]int{}
	var wrong, taken []string
	total := 0
	for _, set := range []string{"bfcl", "tau2", "agentdojo"} {
		values := catalogValues(t, filepath.Join(root, set))
		if len(values) == 0 {
			t.Fatalf("no argument values in %s", set)
		}
		for v, number := range values {
			total++
			c := classOf(v)
			counts[c]++
			if c != classPhone && c != classAccount && c != classCard {
				continue
			}
			taken = append(taken, set+": "+c.String()+" "+v)
			if number || dateForms.MatchString(v) || timeForms.MatchString(v) || amountForms.MatchString(v) {
				wrong = append(wrong, set+": "+c.String()+" "+v)
			}
		}
	}
	sort.Strings(taken)
	for _, s := range taken {
		t.Logf("classified: %s", s)
	}
	t.Logf("%d distinct argument values: url %d, email %d, phone %d, account %d, card %d, none %d",
		total, counts[classURL], counts[classEmail], counts[classPhone], counts[classAccount], counts[classCard], counts[classNone])
	t.Logf("dates, times or amounts classified as phone, account or card: %d", len(wrong))
	for _, s := range wrong {
		t.Errorf("a date, time or amount classified: %s", s)
	}
}
