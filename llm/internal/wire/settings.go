package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

// Settings are the fields every provider's Config has and checks alike.
type Settings struct {
	Model    string
	Name     string
	BaseURL  string
	Protocol llm.Protocol
	Timeout  time.Duration
	Stream   llm.StreamLimits
}

// Check fills s's empty Name, BaseURL, Protocol (JSON) and Timeout with
// the provider's defaults and checks s: a model, an absolute http(s) base
// URL, a known protocol, a timeout not negative, valid stream limits.
// Errors begin with "<pkg>: new provider".
func (s *Settings) Check(pkg, name, baseURL string, timeout time.Duration) error {
	if s.Model == "" {
		return errors.New(pkg + ": new provider: model is required")
	}
	if s.Name == "" {
		s.Name = name
	}
	if s.BaseURL == "" {
		s.BaseURL = baseURL
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: new provider %s: "+format, append([]any{pkg, s.Name}, args...)...)
	}
	if !ValidBaseURL(s.BaseURL) {
		return fail("base URL %q is not an absolute http(s) URL", s.BaseURL)
	}
	switch s.Protocol {
	case "":
		s.Protocol = llm.ProtocolJSON
	case llm.ProtocolJSON, llm.ProtocolTools:
	default:
		return fail("unknown protocol %q", s.Protocol)
	}
	switch {
	case s.Timeout == 0:
		s.Timeout = timeout
	case s.Timeout < 0:
		return fail("negative timeout %v", s.Timeout)
	}
	if err := s.Stream.Check(); err != nil {
		return fail("%w", err)
	}
	return nil
}
