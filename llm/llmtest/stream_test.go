package llmtest_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// readChunks posts a streamed request through the in-process transport,
// where each write of the fake arrives as one read, and returns the reads.
func readChunks(t *testing.T, h http.Handler, url, body string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("anthropic-version", "2026-10-21")
	resp, err := llmtest.InProcess(h).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var chunks []string
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			chunks = append(chunks, string(buf[:n]))
		}
		if err == io.EOF {
			return chunks
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// splitsInside returns offsets of body that fall inside the first
// two-byte rune and right after the backslash of the first escape.
func splitsInside(t *testing.T, body []byte) []int {
	t.Helper()
	r := bytes.Index(body, []byte("м"))
	e := bytes.Index(body, []byte(`\"`))
	if r < 0 || e < 0 {
		t.Fatalf("no rune or escape in %s", body)
	}
	if r+1 < e+1 {
		return []int{r + 1, e + 1}
	}
	return []int{e + 1, r + 1}
}

func TestChunkingSplitsInsideRunesAndEscapes(t *testing.T) {
	const text = "мир \"в кавычках\""
	// Each fake answers a streamed request twice: generated, then the
	// same bytes verbatim, cut inside a rune and inside an escape.
	var cut llmtest.Chunking
	var whole []byte
	oai := llmtest.NewServer(llmtest.ServerConfig{Respond: func(*llmtest.ChatRequest) llmtest.HTTPReply {
		if whole == nil {
			return llmtest.HTTPReply{Content: text}
		}
		return llmtest.HTTPReply{Body: whole, Chunking: &cut}
	}})
	defer oai.Close()
	anth := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{Respond: func(*llmtest.AnthropicRequest) llmtest.AnthropicReply {
		if whole == nil {
			return llmtest.AnthropicReply{Text: text}
		}
		return llmtest.AnthropicReply{Body: whole, Chunking: &cut}
	}})
	defer anth.Close()
	for _, tc := range []struct {
		name, url, body string
		h               http.Handler
	}{
		{"chat completions", oai.URL + "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, oai.Handler()},
		{"messages", anth.URL + "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`, anth.Handler()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole = nil
			whole = []byte(strings.Join(readChunks(t, tc.h, tc.url, tc.body), ""))
			cut = llmtest.Chunking{Splits: splitsInside(t, whole)}
			chunks := readChunks(t, tc.h, tc.url, tc.body)
			if len(chunks) != 3 || len(chunks[0]) != cut.Splits[0] || len(chunks[0])+len(chunks[1]) != cut.Splits[1] {
				t.Fatalf("chunks %q, want cuts at %v", chunks, cut.Splits)
			}
			if strings.Join(chunks, "") != string(whole) {
				t.Errorf("cut body differs from the whole one")
			}
		})
	}
}
