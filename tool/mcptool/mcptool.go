// Package mcptool connects the engine to Model Context Protocol servers and
// offers their tools as tool.Tool values, with risk and confirmation decided
// on our side.
//
// # Connections
//
// Connect opens one client session per configured server (a stdio command
// or a streamable HTTP endpoint) that every conversation shares. A session
// that ends (the process exits, the endpoint goes away, a keepalive ping
// fails) is reopened in the background with exponential back-off; calls
// made meanwhile return a StatusError result. The tool list is fetched on
// connect and again on every notifications/tools/list_changed.
//
// A stdio server runs with an explicit environment: the minimal one the
// official MCP SDKs give (HOME, LOGNAME, PATH, SHELL, TERM, USER), those
// named in ServerConfig.InheritEnv, and ServerConfig.Env — never the
// engine's own environment with its keys. A server that exits while
// starting is reported with the last lines of its stderr.
//
// The client declares no roots. Sampling and elicitation are declared
// only when ServerConfig enables them per server; then every request is
// tied to the call in flight that caused it (by its progress token, or as
// the only call in flight — otherwise it is refused) and shown to that
// call's user through the channel's chat.Live, which the engine puts in
// the call's context. Sampling runs only after the user allows it, through
// ServerConfig.Sample (the engine's model). Elicitation shows a URL as
// text and never opens it, and fills a form one field at a time, each
// answer checked against the field's schema. No channel to ask, no answer
// within ServerConfig.AskTimeout, or the call ending first: sampling is
// rejected and elicitation cancelled; nothing is made up for the user.
//
// # Policy
//
// Server metadata is advice. For each tool the Policy decides, in order:
//
//  1. Visibility. An entry with Hidden hides the tool. On an untrusted
//     server (Policy.Trusted false, the default) a tool no entry matches is
//     hidden. A tool whose name reads as dumping the environment or secrets
//     (a word such as env, environment, printenv, secret, credentials, as
//     in get-env or printEnv) is hidden unless an entry names it exactly;
//     a glob never shows it. A tool whose input or output schema does not
//     compile, or whose name cannot be mapped, is hidden too; every hidden
//     tool is logged with its reason and listed by Server.Catalog.
//  2. Risk. The matching entry's Risk, if set, is final: annotations are
//     not read, so a readOnlyHint never lowers a configured risk. Otherwise
//     the risk is the larger of Policy.DefaultRisk (empty: write:full) and
//     the annotations' reading, with the protocol's defaults for absent
//     fields (readOnlyHint false, destructiveHint true, openWorldHint true):
//     readOnlyHint true reads as read; else destructiveHint or
//     openWorldHint reads as write:full (irreversible or external); else
//     (additive, closed-world) write:safe.
//  3. Confirmation. The entry's Confirm, if set, is final. Otherwise
//     Policy.DefaultConfirm, or when that is empty "always" for write:full
//     and "never" below. Then, when the entry sets no Confirm, the risk is
//     write:full and the annotations read as write:full too, confirmation
//     is "always" whatever the default says.
//
// Annotations can therefore only add caution, which is why they are read
// even from untrusted servers. Roles in an entry restrict who may run the
// tool; the engine's tenant roles apply in addition.
//
// # Exposure
//
// Server.Tools returns each visible tool as a tool.Tool named
// "<server>.<tool>": the server's tool name with every character outside
// [a-zA-Z0-9_.-] replaced by '_', cut to 64 characters with a short hash
// when too long or when two names collide. NewAction returns the universal
// action "mcp" with arguments {"server", "tool", "args"}: it implements
// tool.Resolver, resolving to a spec named "mcp:<server>/<tool>" (the same
// mapped tool name) with the target's risk, confirmation and title, after
// validating the inner arguments against the target's input schema. It
// also implements tool.ContextSource, listing the callable tools.
//
// # Calls
//
// A call is bounded by the tool's timeout; when it expires the SDK sends
// notifications/cancelled to the server and the result is an error that
// says the server may still have acted. Progress notifications are kept in
// the result (Data.progress), shown through the call's chat.Live (a status
// message edited in place on Telegram) and passed to
// ServerConfig.OnProgress. A
// declared outputSchema is checked against structuredContent; a mismatch or
// a missing structured result is an error. isError results are errors. The
// result's data is the server's content as evidence — text, structured
// content, and descriptions of images, audio and resources — capped at the
// tool's size limit; nothing in it is ever read as an instruction. Per-user
// and per-tool token buckets return a "rate_limited" error result. Every
// call ends with an AuditRecord (server, tool, argument hash, duration,
// status) passed to ServerConfig.Audit and summarized in Data.audit.
//
// MCP has no field for the engine's idempotency key, so it is not sent and
// no MCP tool is declared idempotent: the engine never repeats a write
// whose outcome is unknown.
//
// The package does not read configuration files, build registries, decide
// on confirmation, or retry calls: a call that may have reached the server
// is never repeated.
package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/tool"
)

// Defaults for zero ServerConfig fields.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultMinBackoff      = 500 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
	DefaultKeepAlive       = 30 * time.Second
	DefaultProtocolVersion = "2025-11-25"
)

// maxTools bounds how many tools of one server are considered.
const maxTools = 1000

// ServerConfig describes one MCP server. Exactly one of Command, URL and
// Dial is set.
type ServerConfig struct {
	// Name identifies the server in tool names ("<name>.<tool>",
	// "mcp:<name>/<tool>"): a letter, then letters, digits, '_' or '-', at
	// most 32 characters.
	Name string

	// Command and Args start a stdio server; a Command without a slash is
	// looked up in our PATH. Dir is its working directory (empty: ours).
	Command string
	Args    []string
	Dir     string
	// Env is the stdio server's environment, exactly.
	Env map[string]string
	// InheritEnv names variables copied from our environment when set
	// there ("PATH", "HOME"); Env wins over them.
	InheritEnv []string

	// URL is a streamable HTTP endpoint. Headers are sent with every
	// request; BearerToken is sent as "Authorization: Bearer ...", and
	// only over https or to a loopback address. Their values never appear
	// in results or logs. Redirects are not followed.
	URL         string
	Headers     map[string]string
	BearerToken string
	// HTTPClient sends the requests; nil means a client of this package.
	// It must have no Timeout: the stream of server notifications is one
	// long request. Calls are bounded by the tool timeouts instead.
	HTTPClient *http.Client

	// Dial makes the transport of each connection attempt: for servers
	// embedded in the process and for tests.
	Dial func(ctx context.Context) (mcp.Transport, error)

	// Policy decides visibility, risk and confirmation of the tools.
	Policy Policy
	// Timeout bounds one call; zero means tool.DefaultTimeout.
	Timeout time.Duration
	// MaxResultBytes caps a result's encoded data; zero means
	// tool.DefaultMaxResultBytes.
	MaxResultBytes int
	// RateLimits bounds call rates; the zero value is unlimited.
	RateLimits RateLimits

	// ConnectTimeout bounds one connection attempt including the first
	// tools/list; zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts (doubling, with jitter); zero means the defaults.
	MinBackoff, MaxBackoff time.Duration
	// KeepAlive is the ping interval that detects a dead peer; zero means
	// DefaultKeepAlive, negative disables pings.
	KeepAlive time.Duration
	// ProtocolVersion is the version offered at initialization; empty
	// means DefaultProtocolVersion.
	ProtocolVersion string

	// Sampling declares the sampling capability: a server may then ask
	// for a completion during a call. Each request is shown to the user of
	// that call, who allows or declines it; allowed ones are completed by
	// Sample, or when Sample is nil by the model of the call's session
	// (tool.Session.Model: the turn's, journaled and costed with it).
	// Elicitation declares the elicitation capability (form and
	// URL): each request is shown to the user, a URL is never opened for
	// them, a form is filled one field at a time, and decline and cancel
	// reach the server as such. Both are off by default. A request that
	// cannot be tied to exactly one call in flight is refused.
	Sampling    bool
	Elicitation bool
	Sample      func(ctx context.Context, req SampleRequest) (SampleResult, error)
	// AskTimeout bounds the wait for the user's answer; zero means
	// DefaultAskTimeout. With Sampling or Elicitation on, a zero Timeout
	// means AskTimeout plus tool.DefaultTimeout, so the user has time to
	// answer within the call.
	AskTimeout time.Duration

	// Logger receives connection events and hidden-tool reasons; nil
	// means slog.Default().
	Logger *slog.Logger
	// Audit, if set, receives a record of every call, refused ones
	// included. It is called synchronously at the end of the call.
	Audit func(AuditRecord)
	// OnProgress, if set, receives each progress notification of a call
	// as it arrives. It must not block.
	OnProgress func(Progress)
	// OnToolsChanged, if set, is called after the tool list changed (a
	// list_changed notification or a reconnection). It must not block.
	OnToolsChanged func()
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

var serverNamePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,31}$`)

// ErrClosed is returned by operations on a closed Server.
var ErrClosed = errors.New("mcp server connection closed")

// Server is one connected MCP server: a shared session, the current tool
// catalog and the call limits. It is safe for concurrent use; Close it to
// end the session and its background work.
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	client  *mcp.Client
	limiter *limiter

	mu      sync.Mutex
	session *mcp.ClientSession // nil while disconnected
	cat     atomic.Pointer[catalog]
	listMu  sync.Mutex // one listing at a time, so an older one never wins

	refresh   chan struct{} // list_changed, coalesced
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	progress  sync.Map // token string -> *progressLog
	nextToken atomic.Uint64
}

// Connect validates cfg, opens the session, lists the tools and starts the
// background work that keeps the session and the catalog current. It
// returns an error for an invalid configuration or when the first
// connection fails within cfg.ConnectTimeout; reconnection only applies
// to sessions that were established once.
func Connect(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if err := validateConfig(&cfg); err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", cfg.Name, err)
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("mcp_server", cfg.Name),
		limiter: newLimiter(),
		refresh: make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
	keepAlive := cfg.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	opts := &mcp.ClientOptions{
		// No roots; sampling and elicitation only when enabled.
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      s.onListChanged,
		ProgressNotificationHandler: s.onProgress,
		KeepAlive:                   keepAlive,
	}
	if cfg.Sampling {
		opts.CreateMessageHandler = s.onSample
	}
	if cfg.Elicitation {
		opts.ElicitationHandler = s.onElicit
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "arbiter", Version: "1"}, opts)
	sess, err := s.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", cfg.Name, err)
	}
	s.session = sess
	s.wg.Add(1)
	go s.run(sess, watch(sess))
	return s, nil
}

func validateConfig(cfg *ServerConfig) error {
	if !serverNamePattern.MatchString(cfg.Name) {
		return fmt.Errorf("name must start with a letter and hold only letters, digits, '_' or '-' (at most 32)")
	}
	n := 0
	for _, set := range []bool{cfg.Command != "", cfg.URL != "", cfg.Dial != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("set exactly one of command, url and dial")
	}
	if cfg.URL != "" {
		auth := cfg.BearerToken != ""
		for k := range cfg.Headers {
			auth = auth || http.CanonicalHeaderKey(k) == "Authorization"
		}
		if err := checkEndpoint(cfg.URL, auth); err != nil {
			return err
		}
		if _, err := httpClient(*cfg); err != nil {
			return err
		}
	}
	if err := cfg.Policy.validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	for _, r := range []Rate{cfg.RateLimits.PerUser, cfg.RateLimits.PerTool} {
		if err := r.validate(); err != nil {
			return err
		}
	}
	if cfg.Timeout < 0 || cfg.MaxResultBytes < 0 || cfg.ConnectTimeout < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 {
		return fmt.Errorf("negative timeout, size or back-off")
	}
	if cfg.AskTimeout < 0 {
		return fmt.Errorf("negative ask timeout")
	}
	if cfg.AskTimeout == 0 {
		cfg.AskTimeout = DefaultAskTimeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = tool.DefaultTimeout
		if cfg.Sampling || cfg.Elicitation {
			cfg.Timeout += cfg.AskTimeout
		}
	}
	if cfg.MaxResultBytes == 0 {
		cfg.MaxResultBytes = tool.DefaultMaxResultBytes
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.ProtocolVersion == "" {
		cfg.ProtocolVersion = DefaultProtocolVersion
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return nil
}

// Name returns the configured server name.
func (s *Server) Name() string { return s.cfg.Name }

// Connected reports whether a session is open now.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != nil
}

// Close ends the session (a stdio server gets its stdin closed, then
// SIGTERM, then SIGKILL) and waits for the background work and for calls
// in flight, each bounded by its timeout. Calls after Close return an
// error result. Close is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		sess := s.session
		s.session = nil
		s.mu.Unlock()
		if sess != nil {
			err = sess.Close()
		}
		s.wg.Wait()
	})
	return err
}

func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// current returns the open session, or nil.
func (s *Server) current() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// dial opens a session and installs the catalog it lists.
func (s *Server) dial(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	t, stderr, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := s.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: s.cfg.ProtocolVersion})
	if err != nil {
		tail := stderr.tail()
		if tail == "" && stderr != nil {
			// The exit may be read before the last of stderr is.
			time.Sleep(100 * time.Millisecond)
			tail = stderr.tail()
		}
		if tail != "" {
			// A server that exits while starting says why on stderr.
			return nil, fmt.Errorf("connect: %w; the server's stderr ends: %s", err, clipText(tail, 800))
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := s.list(ctx, sess); err != nil {
		_ = sess.Close()
		return nil, err
	}
	return sess, nil
}

// list fetches the tool list and swaps the catalog.
func (s *Server) list(ctx context.Context, sess *mcp.ClientSession) error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, t)
		if len(tools) > maxTools {
			break
		}
	}
	cat := buildCatalog(s.cfg, tools)
	prev := map[string]string{}
	if old := s.cat.Swap(cat); old != nil {
		for _, h := range old.hidden {
			prev[h.Name] = h.Hidden
		}
	}
	for _, h := range cat.hidden {
		if prev[h.Name] != h.Hidden {
			s.log.Info("mcp tool hidden", "tool", h.Name, "reason", h.Hidden)
		}
	}
	return nil
}

// Refresh lists the tools again now. Safe to call concurrently with calls.
func (s *Server) Refresh(ctx context.Context) error {
	sess := s.current()
	if sess == nil {
		if s.isClosed() {
			return ErrClosed
		}
		return fmt.Errorf("mcp server %q is not connected", s.cfg.Name)
	}
	if err := s.list(ctx, sess); err != nil {
		return fmt.Errorf("mcp server %q: %w", s.cfg.Name, err)
	}
	return nil
}

func (s *Server) onListChanged(context.Context, *mcp.ToolListChangedRequest) {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// run keeps the session: it refreshes the catalog on list_changed and
// reconnects with back-off when the session ends.
func (s *Server) run(sess *mcp.ClientSession, ended <-chan struct{}) {
	defer s.wg.Done()
	for {
		if !s.serve(sess, ended) {
			<-ended
			return
		}
		s.log.Warn("mcp session ended; reconnecting")
		sess = s.reconnect()
		if sess == nil {
			return
		}
		ended = watch(sess)
		s.toolsChanged()
	}
}

// watch returns a channel closed when sess ends.
func watch(sess *mcp.ClientSession) <-chan struct{} {
	ended := make(chan struct{})
	go func() {
		_ = sess.Wait()
		close(ended)
	}()
	return ended
}

// serve handles refreshes until the session ends (true) or the server is
// closed (false).
func (s *Server) serve(sess *mcp.ClientSession, ended <-chan struct{}) bool {
	for {
		select {
		case <-s.closed:
			return false
		case <-ended:
			s.mu.Lock()
			if s.session == sess {
				s.session = nil
			}
			s.mu.Unlock()
			return !s.isClosed()
		case <-s.refresh:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ConnectTimeout)
			err := s.list(ctx, sess)
			cancel()
			if err != nil {
				if !s.isClosed() {
					s.log.Warn("mcp tools refresh failed", "err", err)
				}
				continue
			}
			s.toolsChanged()
		}
	}
}

// reconnect dials until it succeeds or the server is closed.
func (s *Server) reconnect() *mcp.ClientSession {
	delay := s.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		jittered := delay/2 + rand.N(delay/2+1)
		t := time.NewTimer(jittered)
		select {
		case <-s.closed:
			t.Stop()
			return nil
		case <-t.C:
		}
		// The attempt is abandoned when the server is closed.
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		sess, err := s.dial(ctx)
		cancel()
		if err == nil {
			s.mu.Lock()
			if s.isClosed() {
				s.mu.Unlock()
				_ = sess.Close()
				return nil
			}
			s.session = sess
			s.mu.Unlock()
			s.log.Info("mcp session reopened", "attempt", attempt)
			return sess
		}
		s.log.Warn("mcp reconnect failed", "attempt", attempt, "err", err)
		delay = min(delay*2, s.cfg.MaxBackoff)
	}
}

// dropSession closes sess after a transport failure, so that run
// reconnects.
func (s *Server) dropSession(sess *mcp.ClientSession) {
	s.mu.Lock()
	if s.session == sess {
		s.session = nil
	}
	s.mu.Unlock()
	go func() { _ = sess.Close() }()
}

func (s *Server) toolsChanged() {
	if s.cfg.OnToolsChanged != nil {
		s.cfg.OnToolsChanged()
	}
}
