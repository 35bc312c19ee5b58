package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// splitReader returns its body in the pieces given, one per Read.
type splitReader struct{ parts []string }

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	if r.parts[0] == "" {
		r.parts = r.parts[1:]
	}
	return n, nil
}

const eventBody = ": a comment\n" +
	"event: content_block_delta\r\n" +
	"data: {\"text\":\"Привет, \\\"мир\\\"\\n\"}\r\n\r\n" +
	"id: 7\nretry: 100\n\n" + // an event with neither data nor name: skipped
	"data: first line\ndata:second line\n\n" +
	"data: [DONE]\n\n"

var wantEvents = []Event{
	{Name: "content_block_delta", Data: []byte(`{"text":"Привет, \"мир\"\n"}`)},
	{Data: []byte("first line\nsecond line")},
	{Data: []byte("[DONE]")},
}

func readAll(t *testing.T, r io.Reader) ([]Event, error) {
	t.Helper()
	er := NewEventReader(r)
	var out []Event
	for {
		ev, err := er.Next()
		if err != nil {
			return out, err
		}
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}
}

func TestEventReaderAnySplit(t *testing.T) {
	// Every split point of the body, inside a rune, an escape and a CRLF.
	for i := range len(eventBody) + 1 {
		got, err := readAll(t, &splitReader{parts: []string{eventBody[:i], eventBody[i:]}})
		if err != io.EOF || !reflect.DeepEqual(got, wantEvents) {
			t.Fatalf("split at %d: %q, %v", i, got, err)
		}
	}
	got, err := readAll(t, iotest.OneByteReader(strings.NewReader(eventBody)))
	if err != io.EOF || !reflect.DeepEqual(got, wantEvents) {
		t.Fatalf("one byte at a time: %q, %v", got, err)
	}
}

func TestEventReaderCutAndLimits(t *testing.T) {
	if _, err := readAll(t, strings.NewReader("data: {\"text\":\"cut")); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut inside an event: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := readAll(t, strings.NewReader("data: whole\n")); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("event without its blank line: %v, want io.ErrUnexpectedEOF", err)
	}
	long := "data: " + strings.Repeat("x", MaxEventBytes) + "\n\n"
	if _, err := readAll(t, strings.NewReader(long)); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("oversized event: %v, want ErrEventTooLarge", err)
	}
	boom := errors.New("boom")
	if _, err := readAll(t, io.MultiReader(strings.NewReader("data: x\n"), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("read error: %v, want it returned", err)
	}
}
