package turn

import (
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
)

// What a person may read while the model writes. A channel that streams
// (chat.Streamer) is shown only text the server would send as it stands:
//   - a reply streams only once the answer is known to propose no tool —
//     a JSON decision whose "tool" was read as null or "" before its say,
//     or a text answer to a request that offered neither tools nor a
//     schema (one that cannot propose anything). The object is read by
//     JSON's grammar, and at its first byte out of it nothing more
//     streams: the parser then refuses the answer rather than read a
//     later object in its place (saystream.go). The say of a
//     decision that proposes a tool is never shown (the server renders
//     what the user reads of a call), so it is never streamed;
//   - the text is released a sentence at a time, each only after the
//     unconfirmed-claim check (claims.go) passed on it: a sentence that
//     asserts what no call of the turn confirmed, or says something is
//     done while a write is open, ends the stream — it and the rest reach
//     the person, if at all, in the reply;
//   - each released sentence passes the link rule (links.go) first, and
//     is cut only where no Markdown link or image is open.
// The reply the turn returns replaces whatever was streamed.

// replyStream is the reply's text on its way to a Streamer during one
// model call. OnText calls come from the provider, in order; close ends
// them when the call returned.
type replyStream struct {
	e    *Engine
	s    *state
	out  chat.Streamer
	live bool // plain text may stream: the request can propose nothing

	mu      sync.Mutex
	kind    int8 // 0 unknown yet, 1 JSON decision, 2 plain text
	scan    sayScanner
	held    []byte // said text not released yet
	stopped bool
	closed  bool
}

// streamFor returns the stream of a decision call of s, or nil when
// nobody listens (the common case costs one type assertion).
func (e *Engine) streamFor(s *state, req llm.Request) *replyStream {
	out, ok := s.in.Live.(chat.Streamer)
	if !ok || req.OnText != nil {
		return nil
	}
	return &replyStream{e: e, s: s, out: out, live: len(req.Tools) == 0 && req.Schema == nil}
}

// onText takes the next piece of the model's answer.
func (r *replyStream) onText(piece string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopped {
		return
	}
	if r.kind == 0 {
		trimmed := strings.TrimLeft(piece, " \t\r\n")
		switch {
		case trimmed == "":
			return
		case trimmed[0] == '{' || trimmed[0] == '`':
			r.kind = 1 // a JSON decision, perhaps fenced
		default:
			r.kind = 2
		}
		piece = trimmed
	}
	if r.kind == 2 {
		if r.live {
			r.hold(piece)
		}
		return
	}
	said := r.scan.feed(piece)
	switch r.scan.tool {
	case toolNone:
		r.hold(said)
	case toolProposed, toolBroken:
		r.stopped, r.held = true, nil
	default:
		r.held = append(r.held, said...) // kept until "tool" is read
	}
}

// close ends the stream when the model call returned: nothing said after
// it is passed on, and what was held stays unsent (the reply has it).
func (r *replyStream) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// hold adds said text and releases, one by one, the whole sentences it
// completes.
func (r *replyStream) hold(said string) {
	r.held = append(r.held, said...)
	for !r.stopped {
		cut := firstSentenceCut(r.held)
		if cut < 0 {
			return
		}
		text := string(r.held[:cut])
		r.held = append(r.held[:0], r.held[cut:]...)
		r.release(text)
	}
}

// release passes one or more whole sentences on, unless one may assert
// what the server has to check first.
func (r *replyStream) release(text string) {
	if r.e.unconfirmedClaim(r.s, text) != "" {
		r.stopped, r.held = true, nil
		return
	}
	text, _ = r.e.inertLinks(r.s, text)
	r.out.Text(text)
}

// firstSentenceCut is where the first whole sentence of b ends — after
// . ! ? or … and a space, or after a line break — with no Markdown link
// or image open; -1 when none has ended.
func firstSentenceCut(b []byte) int {
	open := 0
	for i, c := range b {
		switch c {
		case '[', '(':
			open++
		case ']', ')':
			open = max(open-1, 0)
		case '\n':
			if open == 0 {
				return i + 1
			}
		case ' ':
			if open == 0 && i > 0 && sentenceEnd(b[:i]) {
				return i + 1
			}
		}
	}
	return -1
}

// sentenceEnd reports whether b ends with . ! ? or ….
func sentenceEnd(b []byte) bool {
	switch b[len(b)-1] {
	case '.', '!', '?':
		return true
	}
	return len(b) >= 3 && string(b[len(b)-3:]) == "…"
}

// listening reports whether the turn's channel streams (chat.Streamer).
func (s *state) listening() bool {
	_, ok := s.in.Live.(chat.Streamer)
	return ok
}

// show tells a streaming channel that a step began or ended, and returns
// the step's text: st.Text, else for a tool call its chip (spec.Chip, or
// the sentence naming it by its title).
func (s *state) show(st chat.Step, spec tool.Spec) string {
	out, ok := s.in.Live.(chat.Streamer)
	if !ok {
		return ""
	}
	if st.Text == "" && st.Kind == chat.StepTool {
		if st.Text = spec.Chip.In(s.lang); st.Text == "" {
			st.Text = say(s.lang, txtWorkingOn, spec.TitleIn(s.lang))
		}
	}
	out.Step(st)
	return st.Text
}
