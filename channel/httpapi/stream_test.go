package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
)

// streamingTurn is a turn that, when its channel streams, reports a step,
// a tool's progress and two pieces of text before its reply.
type streamingTurn struct {
	out      chat.Outbound
	err      error
	streamed bool
}

func (s *streamingTurn) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	if st, ok := in.Live.(chat.Streamer); ok {
		s.streamed = true
		st.Step(chat.Step{Kind: chat.StepTool, Name: "search_mail", Text: "Ищу в вашей почте…"})
		st.Progress(chat.Progress{Step: "Почта", Done: 1, Total: 2})
		st.Step(chat.Step{Kind: chat.StepTool, Name: "search_mail", Text: "Ищу в вашей почте…", Done: true})
		st.Text("Нашёл <два> письма. ")
		st.Text("Первое — от Анны.")
	}
	return s.out, s.err
}

func post(t *testing.T, url, accept, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k-alice-123")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

func newStreamServer(t *testing.T, h chat.Handler) string {
	t.Helper()
	s, err := New(Config{Handler: h, Keys: []Key{{Token: "k-alice-123", Identity: alice}},
		Turn: func(context.Context, string, string) (json.RawMessage, error) { return nil, ErrTurnNotFound }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStreamEvents: with Accept: text/event-stream the turn's steps,
// progress and text arrive as events in order, and the last event is the
// reply, byte for byte the JSON answer to the same message; without it
// the turn gets no stream and the answer is the JSON reply.
func TestStreamEvents(t *testing.T) {
	h := &streamingTurn{out: chat.Outbound{TurnID: "t1", Say: "Нашёл <два> письма. Первое — от Анны."}}
	url := newStreamServer(t, h)
	const body = `{"conversation_id":"c1","text":"что в почте?"}`

	resp, plain := post(t, url, "", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || h.streamed {
		t.Fatalf("JSON answer: %d %s, streamed %v", resp.StatusCode, resp.Header.Get("Content-Type"), h.streamed)
	}
	resp, stream := post(t, url, "application/json;q=0.5, text/event-stream", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !h.streamed {
		t.Fatalf("stream: %d %s, streamed %v", resp.StatusCode, resp.Header.Get("Content-Type"), h.streamed)
	}
	want := "event: progress\ndata: {\"kind\":\"tool\",\"name\":\"search_mail\",\"text\":\"Ищу в вашей почте…\",\"done\":false}\n\n" +
		"event: progress\ndata: {\"kind\":\"tool\",\"name\":\"Почта\",\"done\":false,\"progress\":{\"done\":1,\"total\":2}}\n\n" +
		"event: progress\ndata: {\"kind\":\"tool\",\"name\":\"search_mail\",\"text\":\"Ищу в вашей почте…\",\"done\":true}\n\n" +
		"event: text\ndata: {\"text\":\"Нашёл <два> письма. \"}\n\n" +
		"event: text\ndata: {\"text\":\"Первое — от Анны.\"}\n\n" +
		"event: reply\ndata: " + plain + "\n"
	if stream != want {
		t.Errorf("stream:\n%s\nwant:\n%s", stream, want)
	}
}

// TestStreamErrors: a turn with no reply ends its stream with an error
// event of the JSON answer's code; a request refused before the turn is
// the JSON error with its status.
func TestStreamErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{{errors.New("store down"), "unavailable"}, {chat.ErrCaseConflict, "case_conflict"}} {
		url := newStreamServer(t, &streamingTurn{err: c.err})
		_, stream := post(t, url, "text/event-stream", `{"conversation_id":"c1","text":"x"}`)
		if i := strings.LastIndex(stream, "event: "); i < 0 || !strings.HasPrefix(stream[i:], "event: error\ndata: {\"error\":{\"code\":\""+c.code+"\"") {
			t.Errorf("%v: stream ends %q", c.err, stream[max(0, len(stream)-120):])
		}
	}
	url := newStreamServer(t, &streamingTurn{})
	resp, body := post(t, url, "text/event-stream", `{"conversation_id":`)
	if resp.StatusCode != 400 || !strings.Contains(body, `"bad_request"`) {
		t.Errorf("malformed: %d %s", resp.StatusCode, body)
	}
}

// TestWantsStream: only a request naming text/event-stream streams, and
// telling costs a JSON client nothing.
func TestWantsStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"": false, "application/json": false, "*/*": false, "text/event-stream": true,
		"application/json, text/event-stream;q=0.9": true, "Text/Event-Stream": true, "text/event-streams": false,
	} {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("Accept", accept)
		if got := wantsStream(r); got != want {
			t.Errorf("Accept %q: stream %v, want %v", accept, got, want)
		}
	}
	r := httptest.NewRequest("POST", "/v1/messages", nil)
	r.Header.Set("Accept", "application/json")
	if n := testing.AllocsPerRun(100, func() { wantsStream(r) }); n != 0 {
		t.Errorf("a JSON request costs %v allocations to tell", n)
	}
}
