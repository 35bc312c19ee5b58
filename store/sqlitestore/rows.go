package sqlitestore

import (
	"math"
	"strconv"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/store"
)

// A turn's model and tool calls are kept in its row, one JSON array of
// rows per kind, each row an array of the columns of the views llm_calls
// and tool_calls read it with (see foldCalls in schema.go). Encoded here,
// they cost the commit no statement and no table of their own, and the
// views take them apart only when they are read.

// appendRows encodes rows as a JSON array, each row an array that
// appendRow writes the inside of.
func appendRows[T any](b []byte, rows []T, appendRow func([]byte, *T) []byte) []byte {
	b = append(b, '[')
	for i := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendRow(b, &rows[i])
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendLLMRow writes a model call in the column order of the llm_calls view.
func appendLLMRow(b []byte, c *store.LLMCall) []byte {
	for _, s := range [...]string{c.Provider, c.Model, c.Operation, c.Strategy, c.Attempt} {
		b = jsonstr.Append(b, s)
		b = append(b, ',')
	}
	for _, n := range [...]int64{int64(c.InputTokens), int64(c.CachedInputTokens), int64(c.OutputTokens)} {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ',')
	}
	b = appendJSONFloat(b, c.CostUSD)
	b = append(b, ',')
	b = strconv.AppendInt(b, c.DurationMS, 10)
	for _, s := range [...]string{c.Status, c.Error, c.Note} {
		b = append(b, ',')
		b = jsonstr.Append(b, s)
	}
	b = append(b, ',')
	return strconv.AppendInt(b, unixNano(c.At), 10)
}

// appendToolRow writes a tool call in the column order of the tool_calls view.
func appendToolRow(b []byte, c *store.ToolCall) []byte {
	for _, s := range [...]string{c.Tool, c.IdempotencyKey, c.Status, c.Error} {
		b = jsonstr.Append(b, s)
		b = append(b, ',')
	}
	b = strconv.AppendInt(b, c.DurationMS, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, unixNano(c.At), 10)
	for _, s := range [...]string{c.Server, c.RemoteTool, c.ArgsHash, c.Risk, c.Scope, c.ConfirmationID} {
		b = append(b, ',')
		b = jsonstr.Append(b, s)
	}
	return b
}

// appendJSONFloat writes f as a JSON number; NaN and infinities, which
// JSON cannot hold (nor the NOT NULL column: SQLite stores NaN as NULL),
// are written as 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
