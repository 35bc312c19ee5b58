package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
)

// Without an output the logger is off at every level, so the engine's
// per-turn line is never formatted to be thrown away; with one, the
// configured level and format hold.
func TestLoggerWithoutOutputFormatsNothing(t *testing.T) {
	for _, level := range []string{"", "debug", "error"} {
		l := newLogger(config.Log{Level: level}, io.Discard)
		if l.Enabled(context.Background(), slog.LevelError) {
			t.Errorf("level %q into io.Discard: enabled at error", level)
		}
	}
	var buf bytes.Buffer
	l := newLogger(config.Log{Format: "json", Level: "warn"}, &buf)
	l.Info("quiet")
	l.Warn("loud")
	if got := buf.String(); strings.Contains(got, "quiet") || !strings.Contains(got, `"msg":"loud"`) {
		t.Errorf("json at warn wrote %q", got)
	}
}
