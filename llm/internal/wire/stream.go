package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/llm"
)

// MaxEventBytes bounds one server-sent event; a longer one is an error
// rather than memory without end.
const MaxEventBytes = 8 << 20

// ErrEventTooLarge is returned by EventReader.Next for an event longer
// than MaxEventBytes.
var ErrEventTooLarge = errors.New("server-sent event too large")

// Event is one server-sent event: its event field (empty when absent) and
// its data lines joined by "\n".
type Event struct {
	Name string
	Data []byte
}

// EventReader reads server-sent events (the text/event-stream format) from
// a body one at a time, as the bytes arrive: nothing is read past the end
// of the event it returns. A chunk of the body may end anywhere, inside a
// line, a UTF-8 sequence or a JSON escape; an event is only decoded once
// its closing blank line has arrived. Not safe for concurrent use.
type EventReader struct {
	r    *bufio.Reader
	data []byte
	line []byte
}

// NewEventReader returns a reader of the events of r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: bufio.NewReaderSize(r, 4096)}
}

// Next returns the next event that has data or a name. Comments (lines
// starting with ':'), id and retry fields are skipped. The event's Data is
// valid until the next call. At the end of the body Next returns io.EOF
// when no event was begun and io.ErrUnexpectedEOF when one was cut off;
// any other read error is returned as it is.
func (er *EventReader) Next() (Event, error) {
	er.data = er.data[:0]
	var ev Event
	begun, hasData := false, false
	for {
		line, err := er.readLine()
		if err != nil {
			if err == io.EOF && (begun || len(line) > 0) {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData || ev.Name != "" {
				ev.Data = er.data
				return ev, nil
			}
			begun = false
			continue
		}
		begun = true
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if hasData {
				er.data = append(er.data, '\n')
			}
			if len(er.data)+len(value) > MaxEventBytes {
				return Event{}, ErrEventTooLarge
			}
			er.data = append(er.data, value...)
			hasData = true
		case "event":
			ev.Name = string(value)
		}
	}
}

// readLine returns the next line without its end (\n or \r\n). The line is
// valid until the next call.
func (er *EventReader) readLine() ([]byte, error) {
	er.line = er.line[:0]
	for {
		part, err := er.r.ReadSlice('\n')
		if len(er.line)+len(part) > MaxEventBytes {
			return nil, ErrEventTooLarge
		}
		if err == bufio.ErrBufferFull {
			er.line = append(er.line, part...)
			continue
		}
		line := part
		if len(er.line) > 0 {
			er.line = append(er.line, part...)
			line = er.line
		}
		if err != nil {
			return line, err
		}
		line = line[:len(line)-1]
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}

// Drain reads what is left of an answer's body, up to 64 KB, once a stream
// has ended (the end of the chunked encoding may still be unread): a body
// closed before its end closes its connection instead of returning it to
// the pool.
func Drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// StreamTimeout is the cause of a streamed call's end when one of its
// llm.StreamLimits passed. It wraps context.DeadlineExceeded.
type StreamTimeout struct {
	// What passed: "no first token", "silent", "not complete".
	What  string
	Limit time.Duration
}

func (e *StreamTimeout) Error() string {
	switch e.What {
	case "silent":
		return fmt.Sprintf("stream silent for longer than %v", e.Limit)
	case "not complete":
		return fmt.Sprintf("stream not complete within %v", e.Limit)
	}
	return fmt.Sprintf("no first token within %v", e.Limit)
}

func (e *StreamTimeout) Unwrap() error { return context.DeadlineExceeded }

// StreamWatch holds a streamed call to its llm.StreamLimits: its context
// ends, with a *StreamTimeout as the cause, when no piece of the answer
// arrived within the first-token limit, when the answer then stays silent
// longer than the chunk limit, or at the ceiling. Safe for concurrent use.
type StreamWatch struct {
	limits  llm.StreamLimits
	timer   *time.Timer
	started atomic.Bool
}

// WatchStream starts watching a streamed call allowed maxTokens output
// tokens; the call runs under the returned context. stop releases the
// timers and must be called once the call is over.
func WatchStream(ctx context.Context, limits llm.StreamLimits, maxTokens int) (callCtx context.Context, w *StreamWatch, stop func()) {
	limits = limits.WithDefaults()
	ceiling := limits.Ceiling(maxTokens)
	total, cancelTotal := context.WithTimeoutCause(ctx, ceiling, &StreamTimeout{What: "not complete", Limit: ceiling})
	callCtx, cancel := context.WithCancelCause(total)
	w = &StreamWatch{limits: limits}
	w.timer = time.AfterFunc(limits.FirstToken, func() {
		if w.started.Load() {
			cancel(&StreamTimeout{What: "silent", Limit: limits.Chunk})
			return
		}
		cancel(&StreamTimeout{What: "no first token", Limit: limits.FirstToken})
	})
	return callCtx, w, func() {
		w.timer.Stop()
		cancel(nil)
		cancelTotal()
	}
}

// Progress tells the watch a piece of the answer arrived: the silence
// limit starts again.
func (w *StreamWatch) Progress() {
	w.started.Store(true)
	w.timer.Reset(w.limits.Chunk)
}

// StreamInterrupted classifies a failed streamed call by its contexts, as
// Interrupted does for other calls: ctx is the caller's, callCtx the one
// WatchStream returned. A passed limit is transient, with the
// *StreamTimeout as the cause. ok is false while both are live.
func StreamInterrupted(ctx, callCtx context.Context) (kind llm.ErrorKind, msg string, cause error, ok bool) {
	if err := ctx.Err(); err != nil {
		return llm.ErrCanceled, "caller context done: " + err.Error(), err, true
	}
	if callCtx.Err() == nil {
		return "", "", nil, false
	}
	cause = context.Cause(callCtx)
	return llm.ErrTransient, cause.Error(), cause, true
}
