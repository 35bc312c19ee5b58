package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

func TestSettingsCheck(t *testing.T) {
	s := Settings{Model: "m"}
	if err := s.Check("p", "dflt", "https://api.example.com", time.Minute); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if s != (Settings{Model: "m", Name: "dflt", BaseURL: "https://api.example.com", Protocol: llm.ProtocolJSON, Timeout: time.Minute}) {
		t.Errorf("defaults = %+v", s)
	}
	for _, tt := range []struct {
		set  Settings
		want string
	}{
		{Settings{}, "p: new provider: model is required"},
		{Settings{Model: "m", BaseURL: "/v1"}, `p: new provider dflt: base URL "/v1" is not an absolute http(s) URL`},
		{Settings{Model: "m", Name: "n", Protocol: "xml"}, `p: new provider n: unknown protocol "xml"`},
		{Settings{Model: "m", Timeout: -time.Second}, "p: new provider dflt: negative timeout -1s"},
		{Settings{Model: "m", Stream: llm.StreamLimits{FirstToken: -time.Second}}, "p: new provider dflt: "},
	} {
		if err := tt.set.Check("p", "dflt", "https://api.example.com", time.Minute); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Check(%+v) = %v, want %q", tt.set, err, tt.want)
		}
	}
}
