package pgjournal

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// urlEnv names the database the tests use; without it they try
// defaultTestURL and skip when nothing answers there.
const (
	urlEnv         = "ARBITER_TEST_POSTGRES_URL"
	defaultTestURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5"
)

var reach struct {
	once sync.Once
	url  string
	err  error
}

// testURL returns the test database's URL, skipping tb when the default
// database is not reachable and failing it when the one named by urlEnv is
// not.
func testURL(tb testing.TB) string {
	tb.Helper()
	reach.once.Do(func() {
		reach.url = cmp.Or(os.Getenv(urlEnv), defaultTestURL)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, reach.url)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		reach.err = err
	})
	if reach.err != nil {
		msg := strings.ReplaceAll(reach.err.Error(), "\n", " ")
		if os.Getenv(urlEnv) != "" {
			tb.Fatalf("PostgreSQL named by %s not reachable: %s", urlEnv, msg)
		}
		tb.Skipf("PostgreSQL not reachable (set %s to test against one): %s", urlEnv, msg)
	}
	return reach.url
}

// freshSchema returns the name of a schema no test uses yet and drops it,
// with everything in it, when tb ends.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	return freshSchemaNamed(tb, "")
}

// freshSchemaNamed is freshSchema with suffix appended to the name.
func freshSchemaNamed(tb testing.TB, suffix string) string {
	tb.Helper()
	url := testURL(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "pgjournal_test_" + hex.EncodeToString(b[:]) + suffix
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openTest opens a journal on a fresh schema, closed when tb ends.
// mustAppend appends rec to j, failing the test on an error.
func mustAppend(t *testing.T, j *Journal, rec store.TurnRecord) {
	t.Helper()
	if err := j.AppendTurn(t.Context(), rec); err != nil {
		t.Fatalf("AppendTurn(%s): %v", rec.TurnID, err)
	}
}

func openTest(tb testing.TB) *Journal {
	tb.Helper()
	return openSchema(tb, freshSchema(tb))
}

func openSchema(tb testing.TB, schema string) *Journal {
	tb.Helper()
	j, err := Open(context.Background(), Options{URL: testURL(tb), Schema: schema, MaxConns: 4})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(j.Close)
	return j
}

// openConfig opens a journal with a pool configuration the test adjusted.
func openConfig(tb testing.TB, cfg *pgxpool.Config, schema string) *Journal {
	tb.Helper()
	j, err := open(context.Background(), cfg, schema)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(j.Close)
	return j
}

func testConfig(tb testing.TB) *pgxpool.Config {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// countWrites makes every connection of cfg count its writes into n. The
// client writes once per round trip: a request, then it waits for the
// answer.
func countWrites(cfg *pgxpool.Config, n *atomic.Int64) {
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, writes: n}, nil
	}
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func sampleTurn(tenant, id string, now time.Time) store.TurnRecord {
	return store.TurnRecord{
		TurnID: id, Tenant: tenant, Chat: "chat-1", UserID: "u-1",
		Route: "model", Status: "ok", StartedAt: now, DurationMS: 1834,
		LLMCalls: []store.LLMCall{
			{Provider: "primary", Model: "model-a", Operation: "decide", Strategy: "json_schema", Attempt: "first",
				InputTokens: 1520, CachedInputTokens: 1024, OutputTokens: 88, CostUSD: 0.001234, DurationMS: 901,
				Status: "error", Error: "rate limited", Note: "blocked provider primary for 5m0s", At: now},
			{Provider: "fallback", Model: "model-b", Operation: "decide", Strategy: "json_object", Attempt: "fallback",
				InputTokens: 1490, OutputTokens: 91, CostUSD: 0.0005, DurationMS: 700, Status: "ok",
				At: now.Add(time.Second)},
		},
		ToolCalls: []store.ToolCall{
			{Tool: "create_card", IdempotencyKey: "idem-1", Status: "ok", DurationMS: 120, At: now.Add(1700 * time.Millisecond)},
			{Tool: "search", Status: "error", Error: "timeout", DurationMS: 15000, At: now.Add(1800 * time.Millisecond)},
		},
		Trace: json.RawMessage(`{"steps":[{"step":"route","route":"model"}],"text":"Привет"}`),
	}
}

var testNow = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

func TestConformance(t *testing.T) {
	testURL(t)
	storetest.RunJournal(t, func(t *testing.T, _ *storetest.Clock) store.Journal {
		return openTest(t)
	})
}

func TestOpenOptions(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		opts Options
	}{
		{"empty URL", Options{}},
		{"long schema name", Options{URL: "postgres://x", Schema: strings.Repeat("s", maxIdentifier+1)}},
		{"NUL in schema name", Options{URL: "postgres://x", Schema: "a\x00b"}},
		{"negative MaxConns", Options{URL: "postgres://x", MaxConns: -1}},
		{"bad URL", Options{URL: "postgres://x:badport/db"}},
	}
	for _, tt := range tests {
		j, err := Open(ctx, tt.opts)
		if err == nil {
			j.Close()
			t.Errorf("Open with %s succeeded", tt.name)
		} else if errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Open with %s: %v; a configuration error is not an outage", tt.name, err)
		}
	}
}

func TestOpenDefaultSchemaName(t *testing.T) {
	// No database needed: the schema is only checked and quoted here.
	if got := cmp.Or(Options{}.Schema, DefaultSchema); got != "arbiter" {
		t.Errorf("default schema = %q", got)
	}
	q := newQueries(pgx.Identifier{`we"ird`}.Sanitize())
	if !strings.Contains(q.insertTurn, `"we""ird".turns`) {
		t.Errorf("schema not quoted in %s", q.insertTurn)
	}
}

func versions(t *testing.T, j *Journal) (n int, applied []time.Time) {
	t.Helper()
	rows, err := j.pool.Query(t.Context(), withSchema(`SELECT version, applied_at FROM {schema}.schema_versions ORDER BY version`,
		pgx.Identifier{j.schema}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		n++
		if v != n {
			t.Errorf("schema_versions holds version %d at position %d", v, n)
		}
		applied = append(applied, at)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, applied
}

func TestMigrateIdempotent(t *testing.T) {
	schema := freshSchema(t)
	first := openSchema(t, schema)
	n, applied := versions(t, first)
	if n != len(migrations) {
		t.Fatalf("%d versions recorded, want %d", n, len(migrations))
	}
	mustAppend(t, first, sampleTurn("t1", "turn-1", testNow))
	first.Close()

	for range 2 {
		again := openSchema(t, schema)
		n2, applied2 := versions(t, again)
		if n2 != n || !applied2[0].Equal(applied[0]) {
			t.Errorf("reopen changed schema_versions: %d versions, first applied %v; was %d, %v", n2, applied2[0], n, applied[0])
		}
		if _, err := again.GetTurn(t.Context(), "t1", "turn-1"); err != nil {
			t.Errorf("GetTurn after reopen: %v", err)
		}
		again.Close()
	}
}

func TestMigrateConcurrent(t *testing.T) {
	url := testURL(t)
	for round := range 3 {
		schema := freshSchema(t)
		const n = 4
		var wg sync.WaitGroup
		start := make(chan struct{})
		journals := make([]*Journal, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				<-start
				journals[i], errs[i] = Open(t.Context(), Options{URL: url, Schema: schema, MaxConns: 2})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: concurrent Open %d: %v", round, i, err)
			}
			defer journals[i].Close()
		}
		if got, _ := versions(t, journals[0]); got != len(migrations) {
			t.Errorf("round %d: %d versions recorded, want %d", round, got, len(migrations))
		}
		// Each instance writes and reads what another wrote.
		for i, j := range journals {
			if err := j.AppendTurn(t.Context(), sampleTurn("t1", fmt.Sprintf("turn-%d", i), testNow)); err != nil {
				t.Fatalf("round %d: AppendTurn on instance %d: %v", round, i, err)
			}
		}
		if _, err := journals[0].GetTurn(t.Context(), "t1", fmt.Sprintf("turn-%d", n-1)); err != nil {
			t.Errorf("round %d: GetTurn: %v", round, err)
		}
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	schema := freshSchema(t)
	j := openSchema(t, schema)
	if _, err := j.pool.Exec(t.Context(), withSchema(`INSERT INTO {schema}.schema_versions (version, name) VALUES ($1, 'from the future')`,
		pgx.Identifier{schema}.Sanitize()), len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	j.Close()
	newer, err := Open(t.Context(), Options{URL: testURL(t), Schema: schema})
	if err == nil {
		newer.Close()
		t.Fatal("Open of a schema migrated by a newer build succeeded")
	}
	if !errors.Is(err, errNewerSchema) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

// count returns how many rows of table belong to turnID.
func count(t *testing.T, j *Journal, table, turnID string) int {
	t.Helper()
	var n int
	err := j.pool.QueryRow(t.Context(), withSchema(`SELECT count(*) FROM {schema}.`+table+` WHERE turn_id = $1`,
		pgx.Identifier{j.schema}.Sanitize()), turnID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAppendTurnAtomic(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	// A constraint the last row breaks: the turn row and both model calls
	// are written before the server refuses it.
	if _, err := j.pool.Exec(ctx, withSchema(`ALTER TABLE {schema}.tool_calls ADD CONSTRAINT no_explode CHECK (tool <> 'explode')`,
		pgx.Identifier{j.schema}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	rec := sampleTurn("t1", "turn-atomic", testNow)
	rec.ToolCalls[1].Tool = "explode"
	err := j.AppendTurn(ctx, rec)
	if err == nil {
		t.Fatal("AppendTurn with a refused row succeeded")
	}
	if !strings.Contains(err.Error(), "tool call 1") || !strings.Contains(err.Error(), "turn-atomic") {
		t.Errorf("error does not name the turn and the row: %v", err)
	}
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrDuplicateTurn) {
		t.Errorf("refused row reported as %v", err)
	}
	for _, table := range []string{"turns", "llm_calls", "tool_calls"} {
		if n := count(t, j, table, rec.TurnID); n != 0 {
			t.Errorf("%d rows left in %s by a failed AppendTurn", n, table)
		}
	}
	if _, err := j.GetTurn(ctx, "t1", rec.TurnID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTurn after a failed AppendTurn: %v, want ErrNotFound", err)
	}

	// The same id can be written once the row is fixed, on the same pool.
	rec.ToolCalls[1].Tool = "search"
	if err := j.AppendTurn(ctx, rec); err != nil {
		t.Fatalf("AppendTurn after the failed one: %v", err)
	}
	if got, err := j.GetTurn(ctx, "t1", rec.TurnID); err != nil || len(got.ToolCalls) != 2 {
		t.Errorf("GetTurn = %d tool calls, %v", len(got.ToolCalls), err)
	}
}

func TestAppendTurnDuplicate(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	orig := sampleTurn("t1", "turn-dup", testNow)
	mustAppend(t, j, orig)
	for _, tenant := range []string{"t1", "t2"} {
		dup := sampleTurn(tenant, "turn-dup", testNow.Add(time.Hour))
		dup.Status = "overwritten"
		err := j.AppendTurn(ctx, dup)
		if !errors.Is(err, ErrDuplicateTurn) || !strings.Contains(err.Error(), "turn-dup") {
			t.Errorf("second AppendTurn of the id (tenant %s): %v, want ErrDuplicateTurn naming the id", tenant, err)
		}
	}
	got, err := j.GetTurn(ctx, "t1", "turn-dup")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "ok" || !got.StartedAt.Equal(testNow) || len(got.LLMCalls) != 2 {
		t.Errorf("the first record changed: %+v", got)
	}
}

func TestAppendTurnInvalidTrace(t *testing.T) {
	j := openTest(t)
	rec := sampleTurn("t1", "turn-bad-trace", testNow)
	rec.Trace = json.RawMessage(`{"unterminated":`)
	err := j.AppendTurn(t.Context(), rec)
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("AppendTurn with invalid JSON: %v", err)
	}
	if n := count(t, j, "turns", rec.TurnID); n != 0 {
		t.Errorf("turn row written despite its invalid trace")
	}
}

// TestAppendTurnUnstorableText: text PostgreSQL cannot hold is stored with
// U+FFFD in place rather than costing the turn its record.
func TestAppendTurnUnstorableText(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	rec := store.TurnRecord{
		TurnID: "turn-\x00nul", Tenant: "t1", Chat: "chat-\xff", UserID: "u-1", Route: "model", Status: "ok",
		LLMCalls:  []store.LLMCall{{Provider: "p", Error: "cut mid-rune \xd0", Note: "nul\x00here"}},
		ToolCalls: []store.ToolCall{{Tool: "search", Error: "\x00"}},
		Trace:     json.RawMessage(`{"text":"a\u0000b","path":"C:\\u0000","bad":"` + "\xfe" + `"}`),
	}
	if err := j.AppendTurn(ctx, rec); err != nil {
		t.Fatalf("AppendTurn: %v", err)
	}
	got, err := j.GetTurn(ctx, "t1", rec.TurnID) // looked up with the same bytes
	if err != nil {
		t.Fatalf("GetTurn: %v", err)
	}
	if got.TurnID != rec.TurnID || got.Chat != "chat-\uFFFD" || got.LLMCalls[0].Error != "cut mid-rune \uFFFD" ||
		got.LLMCalls[0].Note != "nul\uFFFDhere" || got.ToolCalls[0].Error != "\uFFFD" {
		t.Errorf("GetTurn = %+v", got)
	}
	var trace map[string]string
	if err := json.Unmarshal(got.Trace, &trace); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"text": "a\uFFFDb", "path": `C:\u0000`, "bad": "\uFFFD"}; fmt.Sprint(trace) != fmt.Sprint(want) {
		t.Errorf("trace = %q, want %q", trace, want)
	}
	// Zero times round-trip as zero.
	if !got.StartedAt.IsZero() || !got.LLMCalls[0].At.IsZero() || !got.ToolCalls[0].At.IsZero() {
		t.Errorf("zero times came back as %v, %v, %v", got.StartedAt, got.LLMCalls[0].At, got.ToolCalls[0].At)
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"Привет", "Привет"},
		{"a\x00b", "a\uFFFDb"},
		{"cut \xd0", "cut \uFFFD"},
		{"\xff\xfe\x00", "\uFFFD\uFFFD"}, // one replacement per invalid run, then the NUL
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = clean("a clean string, Привет") }); n != 0 {
		t.Errorf("clean of clean text allocates %.0f times", n)
	}
}

func TestCleanJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"b"}`, `{"a":"b"}`},
		{`{"a":"\u0000"}`, `{"a":"\ufffd"}`},
		{`{"a":"x\\u0000"}`, `{"a":"x\\u0000"}`},   // an escaped backslash, then text
		{`{"a":"x\\\u0000"}`, `{"a":"x\\\ufffd"}`}, // an escaped backslash, then a NUL
		{`{"a":"\u00000"}`, `{"a":"\ufffd0"}`},     // a NUL, then a digit
		{`{"a":"\u0001\"\u0000"}`, `{"a":"\u0001\"\ufffd"}`},
		{"{\"a\":\"\xff\"}", "{\"a\":\"\uFFFD\"}"},
		{`["\`, `["\`}, // invalid JSON is left for the server to refuse
	}
	for _, tt := range tests {
		if got := string(cleanJSON([]byte(tt.in))); got != tt.want {
			t.Errorf("cleanJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	raw := []byte(`{"steps":[{"step":"route"}],"text":"Привет"}`)
	if n := testing.AllocsPerRun(100, func() { _ = cleanJSON(raw) }); n != 0 {
		t.Errorf("cleanJSON of clean JSON allocates %.0f times", n)
	}
}

func TestGetTurnNotFoundWrapsIDs(t *testing.T) {
	j := openTest(t)
	_, err := j.GetTurn(t.Context(), "t9", "turn-404")
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "turn-404") || !strings.Contains(err.Error(), "t9") {
		t.Errorf("GetTurn of an unknown id: %v", err)
	}
}

func TestRoundTrips(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	var writes atomic.Int64
	countWrites(cfg, &writes)
	j := openConfig(t, cfg, freshSchema(t))
	ctx := t.Context()

	measure := func(f func() error) int64 {
		t.Helper()
		before := writes.Load()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return writes.Load() - before
	}
	// The first use of a statement on a connection prepares it: one more
	// round trip.
	if n := measure(func() error { return j.AppendTurn(ctx, sampleTurn("t1", "turn-0", testNow)) }); n != 2 {
		t.Errorf("first AppendTurn on the connection took %d round trips, want 2", n)
	}
	for i := 1; i <= 3; i++ {
		if n := measure(func() error { return j.AppendTurn(ctx, sampleTurn("t1", fmt.Sprintf("turn-%d", i), testNow)) }); n != 1 {
			t.Errorf("AppendTurn %d took %d round trips, want 1", i, n)
		}
	}
	bare := store.TurnRecord{TurnID: "turn-bare", Tenant: "t1", Trace: json.RawMessage(`{}`)}
	if n := measure(func() error { return j.AppendTurn(ctx, bare) }); n != 1 {
		t.Errorf("AppendTurn without calls took %d round trips, want 1", n)
	}
	get := func() error { _, err := j.GetTurn(ctx, "t1", "turn-1"); return err }
	if n := measure(get); n != 2 {
		t.Errorf("first GetTurn took %d round trips, want 2", n)
	}
	if n := measure(get); n != 1 {
		t.Errorf("GetTurn took %d round trips, want 1", n)
	}
	// A page of turns, then its calls in one batch.
	list := func(f store.TurnFilter) func() error {
		return func() error {
			recs, err := j.ListTurns(ctx, "t1", f)
			if err == nil && len(recs) == 0 && f.Chat == "" {
				err = errors.New("ListTurns found nothing")
			}
			return err
		}
	}
	measure(list(store.TurnFilter{}))
	if n := measure(list(store.TurnFilter{Limit: 3})); n != 2 {
		t.Errorf("ListTurns took %d round trips, want 2", n)
	}
	measure(list(store.TurnFilter{Chat: "none"}))
	if n := measure(list(store.TurnFilter{Chat: "none"})); n != 1 {
		t.Errorf("ListTurns finding nothing took %d round trips, want 1", n)
	}
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestOpenUnreachable(t *testing.T) {
	url := "postgres://postgres@" + closedPort(t) + "/test?sslmode=disable&connect_timeout=5"
	j, err := Open(t.Context(), Options{URL: url})
	if err == nil {
		j.Close()
		t.Fatal("Open of an unreachable database succeeded")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of an unreachable database: %v, want ErrUnavailable", err)
	}
}

// proxy forwards TCP connections to the database until it is cut.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(u, c); u.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, u); c.Close() })
		}
	})
	t.Cleanup(p.cut)
	return p
}

// cut refuses new connections and breaks the open ones.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func TestUnavailableAfterOutage(t *testing.T) {
	cfg := testConfig(t)
	p := startProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port)))
	addr := p.ln.Addr().(*net.TCPAddr)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = addr.IP.String(), uint16(addr.Port), nil
	j := openConfig(t, cfg, freshSchema(t))
	ctx := t.Context()
	mustAppend(t, j, sampleTurn("t1", "turn-1", testNow))

	p.cut()
	checks := map[string]func() error{
		"AppendTurn": func() error { return j.AppendTurn(ctx, sampleTurn("t1", "turn-2", testNow)) },
		"GetTurn":    func() error { _, err := j.GetTurn(ctx, "t1", "turn-1"); return err },
		"CostPerDay": func() error { _, err := j.CostPerDay(ctx, "t1", testNow, testNow.Add(time.Hour)); return err },
		"TurnsOfConversation": func() error {
			_, err := j.TurnsOfConversation(ctx, "t1", "chat-1", "u-1", 10)
			return err
		},
	}
	for name, f := range checks {
		if err := f(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the database gone: %v, want ErrUnavailable", name, err)
		}
	}
}

func TestClosed(t *testing.T) {
	j := openTest(t)
	j.Close()
	j.Close()
	ctx := t.Context()
	if err := j.AppendTurn(ctx, sampleTurn("t1", "turn-1", testNow)); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("AppendTurn after Close: %v, want ErrUnavailable", err)
	}
	if _, err := j.GetTurn(ctx, "t1", "turn-1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetTurn after Close: %v, want ErrUnavailable", err)
	}
	if _, err := j.ListTurns(ctx, "t1", store.TurnFilter{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("ListTurns after Close: %v, want ErrUnavailable", err)
	}
}

func TestCanceledContext(t *testing.T) {
	j := openTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := j.AppendTurn(ctx, sampleTurn("t1", "turn-1", testNow))
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("AppendTurn with a canceled context: %v, want context.Canceled only", err)
	}
	if _, err := j.GetTurn(t.Context(), "t1", "turn-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTurn of a turn appended with a canceled context: %v, want ErrNotFound", err)
	}
	if _, err := j.ListTurns(ctx, "t1", store.TurnFilter{}); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("ListTurns with a canceled context: %v, want context.Canceled only", err)
	}
}
