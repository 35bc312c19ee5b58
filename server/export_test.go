package server

import (
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool/taskboard"
)

// TestBoard is the server's embedded task board (nil when it is off), for
// the server's tests that read the cards a turn wrote.
func (s *Server) TestBoard() *taskboard.Board { return s.board }

// TestSQLite is the server's embedded file, for the server's tests that
// look at its tables.
func (s *Server) TestSQLite() *sqlitestore.Store { return s.env.SQLite }
