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
