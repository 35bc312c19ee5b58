package turntest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// Transcripts runs every dir/*.txtar as a subtest named after its file:
// play reads the archive and returns the transcript it wrote, which must
// equal the archive's "want" section byte for byte. With update the want
// section is rewritten instead (added if missing), to be read before it
// is committed.
func Transcripts(t *testing.T, dir string, update bool, play func(t *testing.T, ar *txtar.Archive) string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s: %v", dir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := play(t, ar)
			want := section(ar, "want")
			if update {
				if want == nil {
					ar.Files = append(ar.Files, txtar.File{Name: "want"})
					want = &ar.Files[len(ar.Files)-1]
				}
				want.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want == nil || string(want.Data) != got {
				wanted := ""
				if want != nil {
					wanted = string(want.Data)
				}
				t.Errorf("transcript differs from the want section (rerun with -update to rewrite it after checking):\n--- got\n%s\n--- want\n%s", got, wanted)
			}
		})
	}
}

func section(ar *txtar.Archive, name string) *txtar.File {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			return &ar.Files[i]
		}
	}
	return nil
}

// Section returns the data of the archive's section name, and whether it
// has one.
func Section(ar *txtar.Archive, name string) ([]byte, bool) {
	if f := section(ar, name); f != nil {
		return f.Data, true
	}
	return nil, false
}

// Verb plays one script line: where names the line for messages, rest is
// what follows the verb.
type Verb func(where, rest string)

// Script plays script line by line: each line's first word picks its
// verb, blank lines and lines starting with # are passed over, and a verb
// not in verbs fails the test.
func Script(t testing.TB, script string, verbs map[string]Verb) {
	t.Helper()
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		play, ok := verbs[verb]
		if !ok {
			t.Fatalf("script line %d (%s): unknown verb %q", n+1, line, verb)
		}
		play(fmt.Sprintf("script line %d (%s)", n+1, line), rest)
	}
}

// Args reads `key=value key="quoted value"` pairs; a quoted value is a Go
// string literal.
func Args(t testing.TB, where, s string) map[string]string {
	t.Helper()
	kv := map[string]string{}
	s = strings.TrimSpace(s)
	for s != "" {
		key, after, ok := strings.Cut(s, "=")
		if !ok {
			t.Fatalf("%s: expected key=value in %q", where, s)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			val, _ = strconv.Unquote(q)
			after = after[len(q):]
		} else {
			val, after, _ = strings.Cut(after, " ")
		}
		kv[strings.TrimSpace(key)] = val
		s = strings.TrimSpace(after)
	}
	return kv
}
