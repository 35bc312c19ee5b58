package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
)

// terminal is the chat loop's view of the terminal: lines typed, read in
// the background so a question can stop waiting for one, and the turn's
// chat.Live — progress printed as it comes, questions asked in place.
type terminal struct {
	lines <-chan string // closed at end of input
	done  chan struct{}
	out   io.Writer
}

// newTerminal starts reading in; close stops it once the reader is
// blocked no more than on the current line.
func newTerminal(in io.Reader, out io.Writer) *terminal {
	lines := make(chan string)
	t := &terminal{lines: lines, done: make(chan struct{}), out: out}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-t.done:
				return
			}
		}
	}()
	return t
}

func (t *terminal) close() { close(t.done) }

// readLine returns the next typed line, or false at end of input.
func (t *terminal) readLine() (string, bool) {
	line, ok := <-t.lines
	return line, ok
}

func (t *terminal) Progress(p chat.Progress) {
	text := "… " + p.Step
	if p.Total > 0 {
		text += fmt.Sprintf(": %d%%", int(100*p.Done/p.Total))
	}
	if p.Message != "" {
		text += " — " + p.Message
	}
	fmt.Fprintln(t.out, text)
}

// Ask prints the question with numbered choices and waits for a number
// or, where the question takes text, any text.
func (t *terminal) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	fmt.Fprintln(t.out, "? "+q.Text)
	for i, c := range q.Choices {
		fmt.Fprintf(t.out, "  [%d] %s\n", i+1, c.Label)
	}
	if q.FreeText {
		fmt.Fprintln(t.out, "  (or type the answer)")
	}
	for {
		fmt.Fprint(t.out, "? ")
		select {
		case <-ctx.Done():
			fmt.Fprintln(t.out, "(no answer in time)")
			return chat.Answer{}, ctx.Err()
		case line, ok := <-t.lines:
			if !ok {
				return chat.Answer{}, io.EOF
			}
			line = strings.TrimSpace(line)
			if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(q.Choices) {
				return chat.Answer{Choice: q.Choices[n-1].Value}, nil
			}
			if q.FreeText && line != "" {
				return chat.Answer{Text: line}, nil
			}
			fmt.Fprintf(t.out, "type a number from 1 to %d\n", len(q.Choices))
		}
	}
}
