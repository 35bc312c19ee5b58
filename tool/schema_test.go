package tool

import (
	"errors"
	"strings"
	"testing"
)

func TestNumbersBeyondWhatToolsHold(t *testing.T) {
	s, err := CompileSchema("pay", []byte(`{"type":"object","properties":{"amount":{"type":"integer","minimum":1},"items":{"type":"array","items":{"type":"number"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"amount":1e999}`, `{"amount":123456789012345678901234567890}`, `{"amount":9007199254740993}`, `{"items":[1,-1e400]}`} {
		var ae *ArgsError
		if err := s.Validate("pay", []byte(args)); !errors.As(err, &ae) || !strings.Contains(ae.Error(), "range") {
			t.Errorf("%s: %v, want a range problem", args, err)
		}
	}
	for _, args := range []string{`{"amount":9007199254740991}`, `{"amount":2}`, `{"items":[1.5,-2.25e10]}`} {
		if err := s.Validate("pay", []byte(args)); err != nil {
			t.Errorf("%s: %v", args, err)
		}
	}
}

// A problem's location escapes the keys it passes (RFC 6901), so a key
// holding "/" or "~" names one member, not a path.
func TestProblemLocationEscapesKeys(t *testing.T) {
	s, err := CompileSchema("tag", []byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ae *ArgsError
	if err := s.Validate("tag", []byte(`{"a/b":{"c~d":1e999},"plain":1}`)); !errors.As(err, &ae) {
		t.Fatalf("got %v, want an ArgsError", err)
	}
	if len(ae.Problems) != 1 || ae.Problems[0].Location != "/a~1b/c~0d" {
		t.Errorf("problems %+v, want one at /a~1b/c~0d", ae.Problems)
	}
	for in, want := range map[string]string{"plain": "plain", "a/b": "a~1b", "~/": "~0~1", "": ""} {
		if got := PointerToken(in); got != want {
			t.Errorf("PointerToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// The verdict on {} is worked out once per schema, and is the schema's:
// a schema that requires an argument refuses {} every time.
func TestEmptyArgumentsVerdict(t *testing.T) {
	open, err := CompileSchema("list", []byte(`{"type":"object","properties":{"limit":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	needs, err := CompileSchema("create", []byte(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := open.Validate("list", []byte(`{}`)); err != nil {
			t.Errorf("{} against a schema without required arguments: %v", err)
		}
		var ae *ArgsError
		if err := needs.Validate("create", []byte(`{}`)); !errors.As(err, &ae) || len(ae.Problems) == 0 {
			t.Errorf("{} against a schema requiring title: %v, want an ArgsError naming the problem", err)
		}
	}
}
