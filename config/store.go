package config

// Store selects the state backend: conversations, pending actions,
// inbox, execution records and conversation locks.
type Store struct {
	Kind string `yaml:"kind"` // sqlite (default) or redis
	// Path is the SQLite file (kind sqlite); default data/arbiter.db.
	Path string `yaml:"path"`
	// URL and Prefix locate the shared Redis (kind redis).
	URL    string `yaml:"url"`
	Prefix string `yaml:"prefix"`
	// LockWait bounds the wait for a conversation's lock (default 30s);
	// LockTTL is how long a lock outlives a holder that stopped renewing
	// it (default 45s).
	LockWait Duration `yaml:"lock_wait"`
	LockTTL  Duration `yaml:"lock_ttl"`
	// Reader opens the embedded file beside the process that holds it,
	// without claiming it: for a process that only reads the file (a
	// report, a backup). Without it a second process on the same file
	// refuses to start, naming the holder.
	Reader bool `yaml:"reader"`
}

// Journal selects where turn records go.
type Journal struct {
	// Kind is sqlite (default: the store's file, or data/journal.db when
	// the store is Redis) or postgres.
	Kind   string `yaml:"kind"`
	Path   string `yaml:"path"`
	URL    string `yaml:"url"`
	Schema string `yaml:"schema"`
}

// check asks for what a store kind described here cannot run without; the
// kinds themselves are the program's (server.Check).
func (s Store) check(v *validator) {
	if s.Kind == "redis" && s.URL == "" {
		v.errorf("store", "a redis store needs url (e.g. redis://127.0.0.1:6379/0)")
	}
}

// check asks for what a journal kind described here cannot run without.
func (j Journal) check(v *validator) {
	if j.Kind == "postgres" && j.URL == "" {
		v.errorf("journal", "a postgres journal needs url (e.g. postgres://postgres@127.0.0.1:5432/arbiter)")
	}
}
