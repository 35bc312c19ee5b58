// Package evaltest helps record eval suites against scripted models: a
// fake of the models' API that keeps the configuration's URLs (so the
// recordings replay against the shipped configuration), and a model that
// answers by the newest message.
package evaltest

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// toFake carries requests to a fake server, keeping their URLs as sent.
type toFake struct{ fake *url.URL }

func (t toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host = t.fake.Scheme, t.fake.Host, ""
	return http.DefaultTransport.RoundTrip(out)
}

// Report is what MustPass reads of an eval.Report.
type Report interface {
	Passed() bool
	WriteText(w io.Writer)
}

// MustPass fails the test with err, the error of the run that made rep, or
// with rep's text under what unless every scenario passed; it returns the
// text.
func MustPass(t testing.TB, what string, rep Report, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	if !rep.Passed() {
		t.Fatalf("%s:\n%s", what, b.String())
	}
	return b.String()
}

// FakeModel serves respond as the models' API until the test ends and
// returns it with the transport (eval.Options.Transport) that carries the
// models' requests to it.
func FakeModel(t testing.TB, respond func(*llmtest.ChatRequest) llmtest.HTTPReply) (*llmtest.Server, http.RoundTripper) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.ServerConfig{SkipRecording: true, Respond: respond})
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, toFake{u}
}

// Newest is the newest user message or tool result of r, from the end of
// the live context on when it has one.
func Newest(r *llmtest.ChatRequest) string {
	var last string
	for _, m := range r.Messages {
		if m.Role == "user" || m.Role == "tool" {
			last = m.Content
		}
	}
	if i := strings.LastIndex(last, "</live_context>"); i >= 0 {
		last = last[i:]
	}
	return last
}

// resultToolRE reads the tool a tool_result block names.
var resultToolRE = regexp.MustCompile(`^<tool_result-[^ >]* tool="([a-z_]+)">`)

// ToolResults are the results msgs hold: the model's calls' by call ID,
// and the reads the server ran before asking (the preflight, tool_result
// blocks in user messages) by tool name.
func ToolResults(msgs []llmtest.ChatMessage) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		switch {
		case m.Role == "tool":
			out[m.ToolCallID] = m.Content
		case m.Role == "user" && strings.HasPrefix(m.Content, "<tool_result-"):
			if name := Match(resultToolRE, m.Content); name != "?" {
				out[name] = m.Content
			}
		}
	}
	return out
}

// Match is the first group of re's first match in s, "?" without one.
func Match(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return "?"
}

// Pick returns the key of script the text equals, else the longest key it
// contains; "" when none.
func Pick[V any](script map[string]V, text string) string {
	if _, ok := script[strings.TrimSpace(text)]; ok {
		return strings.TrimSpace(text)
	}
	best := ""
	for key := range script {
		if strings.Contains(text, key) && len(key) > len(best) {
			best = key
		}
	}
	return best
}

// ByText is a model answering each request by its newest message (see
// Newest and Pick); a message no key matches gets a decision that says so.
func ByText(script map[string]llmtest.HTTPReply) func(*llmtest.ChatRequest) llmtest.HTTPReply {
	return func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		if key := Pick(script, Newest(r)); key != "" {
			return script[key]
		}
		return llmtest.HTTPReply{Content: `{"say":"Не понял.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`}
	}
}
