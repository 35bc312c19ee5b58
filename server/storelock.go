package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// One process owns an embedded store: the board's tables, the inbox and
// the conversations' locks live in one SQLite file whose locks coordinate
// only the turns of the process holding them. A second `arbiter serve` or
// `arbiter mcp` on the same file refuses at start, naming the holder, unless
// it is configured as a reader (store.reader). The claim is an advisory
// lock on a side file, <store>.lock, which holds the holder's pid, command
// and start time; the operating system releases it when the holder exits,
// however it exits, so a stale file never blocks anyone.

// ErrStoreInUse is returned (wrapped) by Build when another process holds
// the embedded store.
var ErrStoreInUse = errors.New("the embedded store is in use by another process")

// storeLock is the held claim on an embedded store; release ends it.
type storeLock struct {
	release func() error
}

// lockStore claims the embedded store at path for this process. A path
// that is no file (":memory:") needs no claim.
func lockStore(path string) (*storeLock, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return &storeLock{release: func() error { return nil }}, nil
	}
	lockPath := path + ".lock"
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", lockPath, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if !held {
		holder, _ := os.ReadFile(lockPath)
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by %s (lock file %s). Stop that process, or let it serve MCP on its own listener (channels.mcp), or set store.reader: true for a process that only reads the file",
			ErrStoreInUse, path, describeHolder(string(holder)), lockPath)
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d\ncommand %s\nsince %s\n", os.Getpid(), strings.Join(os.Args, " "), time.Now().UTC().Format(time.RFC3339))
		f.Sync()
	}
	return &storeLock{release: func() error {
		unlock(f)
		return f.Close()
	}}, nil
}

// describeHolder renders what a lock file says of its holder.
func describeHolder(content string) string {
	fields := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			fields[k] = v
		}
	}
	if fields["pid"] == "" {
		return "another process"
	}
	s := "process " + fields["pid"]
	if c := fields["command"]; c != "" {
		s += " (" + c + ")"
	}
	if since := fields["since"]; since != "" {
		s += " since " + since
	}
	return s
}
