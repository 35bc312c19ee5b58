package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/chat"
)

// POST /v1/messages with "Accept: text/event-stream" answers as a stream of
// server-sent events while the turn runs:
//
//	event: progress  a step began or ended ({"kind":"tool","name":…,"text":"Ищу в вашей почте…","done":false}),
//	                 or a running tool reported how far it got ("progress": {"done":…,"total":…})
//	event: text      a piece of what the person will read ({"text":…}), in order
//	event: reply     the reply, exactly the JSON reply of the same turn; the last event
//	event: error     no reply was possible ({"error":{"code","message"}}); the last event
//
// Text pieces are only what the engine would send as it stands (see the
// README, "Streaming"); the reply replaces them.

// wantsStream reports whether the request asks for server-sent events.
// A request that does not name them costs no allocation.
func wantsStream(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if !strings.Contains(strings.ToLower(accept), "text/event-stream") {
		return false
	}
	for part := range strings.SplitSeq(accept, ",") {
		if t, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && t == "text/event-stream" {
			return true
		}
	}
	return false
}

// progressEvent is the data of a progress event.
type progressEvent struct {
	Kind     string  `json:"kind"`
	Name     string  `json:"name,omitempty"`
	Text     string  `json:"text,omitempty"`
	Done     bool    `json:"done"`
	Progress *amount `json:"progress,omitempty"`
}

// amount is how far a running tool got, as it reported.
type amount struct {
	Done  float64 `json:"done"`
	Total float64 `json:"total,omitempty"`
}

// sseLive is the chat.Streamer of a streamed turn: events are queued by
// whoever produces them, never blocking, and written in order by one
// goroutine, so a slow client slows only its own stream.
type sseLive struct {
	httpLive
	mu     sync.Mutex
	wake   *sync.Cond
	queue  [][]byte
	ended  bool
	closed chan struct{}
}

var _ chat.Streamer = (*sseLive)(nil)

// newSSELive starts the stream on w: the headers now, then the events.
func newSSELive(w http.ResponseWriter, live httpLive) *sseLive {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the events back
	w.WriteHeader(http.StatusOK)
	l := &sseLive{httpLive: live, closed: make(chan struct{})}
	l.wake = sync.NewCond(&l.mu)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	go l.write(w, rc)
	return l
}

func (l *sseLive) Progress(p chat.Progress) {
	l.send("progress", progressEvent{Kind: chat.StepTool, Name: p.Step, Text: p.Message, Progress: &amount{Done: p.Done, Total: p.Total}})
}

func (l *sseLive) Step(s chat.Step) {
	l.send("progress", progressEvent{Kind: s.Kind, Name: s.Name, Text: s.Text, Done: s.Done})
}

func (l *sseLive) Text(piece string) {
	l.send("text", struct {
		Text string `json:"text"`
	}{piece})
}

// send queues one event; after finish it is dropped.
func (l *sseLive) send(name string, v any) {
	ev := encodeEvent(name, v)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.queue = append(l.queue, ev)
	l.wake.Signal()
}

// finish queues the last event and waits until everything was written
// (or the client went away).
func (l *sseLive) finish(name string, v any) {
	ev := encodeEvent(name, v)
	l.mu.Lock()
	l.queue = append(l.queue, ev)
	l.ended = true
	l.wake.Signal()
	l.mu.Unlock()
	<-l.closed
}

// write writes queued events until the last one; a failed write (the
// client left) drops the rest.
func (l *sseLive) write(w http.ResponseWriter, rc *http.ResponseController) {
	defer close(l.closed)
	failed := false
	for {
		l.mu.Lock()
		for len(l.queue) == 0 && !l.ended {
			l.wake.Wait()
		}
		batch, last := l.queue, l.ended
		l.queue = nil
		l.mu.Unlock()
		for _, ev := range batch {
			if !failed {
				_, err := w.Write(ev)
				failed = err != nil
			}
		}
		if !failed {
			failed = rc.Flush() != nil
		}
		if last {
			return
		}
	}
}

// encodeEvent is one server-sent event: its name and its data, JSON on
// one line.
func encodeEvent(name string, v any) []byte {
	var b bytes.Buffer
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // ends with the line's \n; JSON holds no raw line break
	b.WriteString("\n")
	return b.Bytes()
}

// streamTurn runs the turn of in for a client that asked for a stream.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, in chat.Inbound, live httpLive) {
	l := newSSELive(w, live)
	in.Live = l
	out, err := s.cfg.Handler.HandleTurn(r.Context(), in)
	if err != nil {
		_, code, msg := s.turnError(in, err) // the stream's status went with its headers
		var b errorBody
		b.Error.Code, b.Error.Message = code, msg
		l.finish("error", b)
		return
	}
	l.finish("reply", replyBody(out))
}
