package servertest

import (
	"context"
	"maps"
	"sync"

	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/tool/taskboard"
)

// BoardWatch holds the embedded task board a server built, for a test that
// reads the cards its turns wrote; the server itself keeps the board off
// its public surface.
type BoardWatch struct {
	mu    sync.Mutex
	board *taskboard.Board
}

// WatchBoard returns kinds whose taskboard tool kind also hands the board
// it builds to the returned watch. The kinds given are left as they are.
func WatchBoard(kinds server.Kinds) (server.Kinds, *BoardWatch) {
	w := &BoardWatch{}
	build := kinds.Tools["taskboard"]
	if build == nil {
		return kinds, w
	}
	kinds.Tools = maps.Clone(kinds.Tools)
	kinds.Tools["taskboard"] = func(ctx context.Context, env *server.Env, sec server.Section) (server.ToolSet, error) {
		set, err := build(ctx, env, sec)
		for _, c := range set.Context {
			if b, ok := c.(*taskboard.Board); ok {
				w.mu.Lock()
				w.board = b
				w.mu.Unlock()
			}
		}
		return set, err
	}
	return kinds, w
}

// Board is the board the server built; nil before it was built or when
// the configuration turns the board off.
func (w *BoardWatch) Board() *taskboard.Board {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.board
}
