package sqlitestore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// The commit's statements run on the driver's connection. A turn's commit
// is six or seven statements; through database/sql each costs allocations
// the store does not need, holding its one connection anyway: the argument
// list, the driver's copy of it, a wrapper of the result. So a batch runs
// inside sql.Conn.Raw, with statements prepared once on that connection
// (the store's sql.Conn keeps it for the store's life) and one argument
// list reused. Everything else goes through database/sql as before.

// commitStmts are the batch's statements, prepared on the driver
// connection. Used only inside sql.Conn.Raw, holding the store's semaphore.
type commitStmts struct {
	on driver.Conn // the connection they were prepared on

	begin, commit, rollback driver.Stmt

	convUpsert    driver.Stmt
	pendingPut    driver.Stmt
	pendingDelete driver.Stmt
	inboxDone     driver.Stmt
	turnInsert    driver.Stmt
	execInsert    driver.Stmt
	execFinish    driver.Stmt
	inboxClaim    driver.Stmt

	args []driver.NamedValue // reused by every exec
}

// driverStmtDef pairs a driver statement slot with its SQL.
type driverStmtDef struct {
	dst   *driver.Stmt
	query string
}

func (c *commitStmts) defs() []driverStmtDef {
	return []driverStmtDef{
		{&c.begin, sqlBegin}, {&c.commit, sqlCommit}, {&c.rollback, sqlRollback},
		{&c.convUpsert, sqlConvUpsert},
		{&c.pendingPut, sqlPendingPut},
		{&c.pendingDelete, sqlPendingDelete},
		{&c.inboxDone, sqlInboxDone},
		{&c.turnInsert, sqlTurnInsert},
		{&c.execInsert, sqlExecInsert},
		{&c.execFinish, sqlExecFinish},
		{&c.inboxClaim, sqlInboxClaim},
	}
}

// use makes the statements ready on dc, preparing them the first time.
func (c *commitStmts) use(dc any) error {
	conn, ok := dc.(driver.Conn)
	if !ok {
		return fmt.Errorf("sqlite driver connection %T", dc)
	}
	if c.on == conn {
		return nil
	}
	if c.on != nil {
		return errors.New("the store's connection changed under its prepared statements")
	}
	for _, d := range c.defs() {
		st, err := prepareOn(conn, d.query)
		if err != nil {
			c.close()
			return fmt.Errorf("prepare %q: %w", d.query, err)
		}
		*d.dst = st
	}
	c.on = conn
	return nil
}

func prepareOn(conn driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(context.Background(), query)
	}
	return conn.Prepare(query)
}

// close closes the statements prepared so far. Called inside Raw, or
// before the connection closes.
func (c *commitStmts) close() error {
	var errs []error
	for _, d := range c.defs() {
		if *d.dst != nil {
			errs = append(errs, (*d.dst).Close())
			*d.dst = nil
		}
	}
	c.on = nil
	return errors.Join(errs...)
}

// exec runs st with args, each of a driver.Value type or converted to one
// as database/sql would.
func (c *commitStmts) exec(st driver.Stmt, args ...any) (driver.Result, error) {
	c.args = c.args[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		c.args = append(c.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	var (
		r   driver.Result
		err error
	)
	if x, ok := st.(driver.StmtExecContext); ok {
		r, err = x.ExecContext(noCancel, c.args)
	} else {
		err = errors.New("sqlite driver statement cannot execute with a context")
	}
	clear(c.args) // hold on to no caller's value
	return r, err
}

// driverValue is v as a driver.Value: as it is when it already is one.
func driverValue(v any) (driver.Value, error) {
	switch v.(type) {
	case nil, int64, float64, bool, []byte, string:
		return v, nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}
