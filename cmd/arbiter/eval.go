package main

import (
	"context"
	"io"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/eval"
)

// evalCommand is arbiter eval: package eval's command over every built-in
// kind.
func evalCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return eval.Main(ctx, args, kinds.All(), stdout, stderr)
}
