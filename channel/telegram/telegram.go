package telegram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/channel/internal/questions"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/internal/wait"
	"github.com/arbiterhq/arbiter/store"
)

// ChannelName is the channel of the inbox items and of every Inbound.
const ChannelName = "telegram"

// Modes of receiving updates.
const (
	ModeWebhook = "webhook"
	ModePolling = "polling"
)

// Defaults of the zero Config fields.
const (
	DefaultAPIBaseURL       = "https://api.telegram.org"
	DefaultWebhookPath      = "/telegram/webhook"
	DefaultMaxBodyBytes     = 256 << 10
	DefaultMaxEvidenceBytes = 32 << 10
	DefaultMaxFileBytes     = 20 << 20 // what the Bot API lets a bot download
	DefaultForwardHold      = 1500 * time.Millisecond
	DefaultCommentGrace     = 300 * time.Millisecond
	DefaultMaxBatch         = 10
	DefaultMaxConcurrent    = 32
	DefaultPollInterval     = time.Second
	DefaultPollTimeout      = 25 * time.Second
	DefaultTypingDelay      = time.Second
	DefaultRetryBackoff     = time.Second
	DefaultGiveUpAfter      = 15 * time.Minute
	DefaultRefusalEvery     = time.Hour
	DefaultAcceptTimeout    = 5 * time.Second
)

// allowedUpdates are the update types the channel asks Telegram for.
var allowedUpdates = []string{"message", "edited_message", "callback_query"}

// Config wires the channel. Zero fields take the documented defaults.
type Config struct {
	// Token is the bot token from @BotFather. Required.
	Token string
	// APIBaseURL is the Bot API server; default DefaultAPIBaseURL.
	APIBaseURL string
	// Mode is ModeWebhook or ModePolling; empty means webhook when
	// PublicURL is set, polling otherwise.
	Mode string
	// SecretToken is the webhook secret Telegram sends in the
	// X-Telegram-Bot-Api-Secret-Token header: 1-256 characters of A-Z,
	// a-z, 0-9, _ and -. Required in webhook mode.
	SecretToken string
	// PublicURL is the externally reachable base URL ("https://bot.example.com");
	// Run registers PublicURL+WebhookPath with setWebhook. Required in
	// webhook mode.
	PublicURL string
	// WebhookPath is where the caller mounts the Channel; default
	// DefaultWebhookPath. ServeHTTP itself does not look at the path.
	WebhookPath string

	// Handler runs the turns. Required.
	Handler chat.Handler
	// Inbox keeps accepted updates until they are processed. Required.
	Inbox store.ChannelInbox
	// Identify maps a Telegram user id to an identity; false means the
	// user is unknown and gets a polite refusal. It must be fast and safe
	// for concurrent use. Required.
	Identify func(telegramUserID int64) (chat.Identity, bool)
	// Transcribe turns a voice message into text. Nil: voice messages are
	// answered with "voice is not enabled".
	Transcribe func(ctx context.Context, audio []byte, mime string) (string, error)

	// MaxEvidenceBytes caps the text of one evidence item (a text document
	// is read only if it is at most this large); default 32 KiB.
	MaxEvidenceBytes int
	// MaxBodyBytes caps a webhook request body; default 256 KiB.
	MaxBodyBytes int64
	// MaxFileBytes caps a download of a voice message, a photo or a
	// document the engine reads (PDF, picture); default 20 MiB.
	MaxFileBytes int64
	// ForwardHold is how long a forward waits for the next forward or the
	// user's comment; default 1.5 s, negative: forwards are not joined.
	ForwardHold time.Duration
	// CommentGrace is how long a message with the user's words waits for
	// forwards that follow it; default 300 ms, negative: it does not wait.
	CommentGrace time.Duration
	// MaxBatch caps the forwards joined into one turn; default 10.
	MaxBatch int
	// MaxConcurrent caps the turns running at once; default 32.
	MaxConcurrent int
	// PollInterval is how often the inbox is read for items accepted by
	// other instances or left from before a restart; default 1 s.
	PollInterval time.Duration
	// PollTimeout is the getUpdates long-poll timeout; default 25 s.
	PollTimeout time.Duration
	// TypingDelay: a turn running longer shows "typing"; default 1 s.
	TypingDelay time.Duration
	// RetryBackoff is the first wait after a failed turn or send; it
	// doubles up to 30 s; default 1 s.
	RetryBackoff time.Duration
	// GiveUpAfter: an item still failing this long after it was accepted
	// is answered with an apology and dropped; default 15 min.
	GiveUpAfter time.Duration
	// RefusalEvery: an unknown user is refused at most once per this
	// period; default 1 h.
	RefusalEvery time.Duration
	// Language of the channel's own messages when neither the identity nor
	// the Telegram user says ("ru" or "en"); default chat.DefaultLanguage.
	Language string

	Now        func() time.Time
	Logger     *slog.Logger
	HTTPClient *http.Client
}

// Channel is the Telegram channel. ServeHTTP (the webhook) and Run are safe
// for concurrent use; Run may be called once.
type Channel struct {
	cfg       Config
	api       *botAPI
	secretSum [32]byte
	running   atomic.Bool
	username  atomic.Pointer[string] // the bot's @username, from getMe
	wake      chan struct{}
	sem       chan struct{}
	workers   sync.WaitGroup

	mu       sync.Mutex
	queues   map[string]*keyQueue // order key -> items in order
	seen     map[string]bool      // ids held in queues, batch members included
	finished map[string]uint64    // id -> fetch generation when it was finished
	redo     map[string]bool      // ids whose Done failed
	fetchGen uint64
	unsent   map[string]*outbox     // replies whose send failed, by item id
	answered map[string]bool        // callback items answered early
	pressed  map[msgRef]pressRecord // keyboards already used
	owners   map[msgRef]ownerRecord // group replies with keyboards -> user
	refused  map[int64]time.Time    // unknown users -> last refusal

	// questions are the open questions of running turns; answers are
	// taken from the accept path, not queued behind the turn that waits.
	questions *questions.Board
	// drafts numbers the message drafts of streamed replies.
	drafts atomic.Int64
}

// New checks cfg, fills its defaults and builds the channel. It does not
// contact Telegram; Run does.
func New(cfg Config) (*Channel, error) {
	if cfg.Token == "" || strings.ContainsAny(cfg.Token, "/ \t\r\n") {
		return nil, errors.New("telegram: Token is required and must not contain '/' or spaces")
	}
	if cfg.Handler == nil || cfg.Inbox == nil || cfg.Identify == nil {
		return nil, errors.New("telegram: Handler, Inbox and Identify are required")
	}
	if cfg.Mode == "" {
		cfg.Mode = ModePolling
		if cfg.PublicURL != "" {
			cfg.Mode = ModeWebhook
		}
	}
	switch cfg.Mode {
	case ModeWebhook:
		if cfg.PublicURL == "" {
			return nil, errors.New("telegram: webhook mode needs PublicURL")
		}
		if err := checkSecret(cfg.SecretToken); err != nil {
			return nil, err
		}
	case ModePolling:
	default:
		return nil, fmt.Errorf("telegram: unknown mode %q (want %q or %q)", cfg.Mode, ModeWebhook, ModePolling)
	}
	if cfg.APIBaseURL == "" {
		cfg.APIBaseURL = DefaultAPIBaseURL
	}
	cfg.APIBaseURL = strings.TrimRight(cfg.APIBaseURL, "/")
	if cfg.WebhookPath == "" {
		cfg.WebhookPath = DefaultWebhookPath
	}
	if !strings.HasPrefix(cfg.WebhookPath, "/") {
		cfg.WebhookPath = "/" + cfg.WebhookPath
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	setDefault(&cfg.MaxEvidenceBytes, DefaultMaxEvidenceBytes)
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&cfg.MaxFileBytes, DefaultMaxFileBytes)
	setDefault(&cfg.ForwardHold, DefaultForwardHold)
	setDefault(&cfg.CommentGrace, DefaultCommentGrace)
	setDefault(&cfg.MaxBatch, DefaultMaxBatch)
	setDefault(&cfg.MaxConcurrent, DefaultMaxConcurrent)
	setDefault(&cfg.PollInterval, DefaultPollInterval)
	setDefault(&cfg.PollTimeout, DefaultPollTimeout)
	setDefault(&cfg.TypingDelay, DefaultTypingDelay)
	setDefault(&cfg.RetryBackoff, DefaultRetryBackoff)
	setDefault(&cfg.GiveUpAfter, DefaultGiveUpAfter)
	setDefault(&cfg.RefusalEvery, DefaultRefusalEvery)
	if cfg.Language == "" {
		cfg.Language = chat.DefaultLanguage
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.MaxConcurrent + 2
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	c := &Channel{
		cfg:       cfg,
		api:       &botAPI{base: cfg.APIBaseURL, token: cfg.Token, hc: cfg.HTTPClient},
		secretSum: sha256.Sum256([]byte(cfg.SecretToken)),
		wake:      make(chan struct{}, 1),
		sem:       make(chan struct{}, cfg.MaxConcurrent),
		queues:    map[string]*keyQueue{},
		seen:      map[string]bool{},
		finished:  map[string]uint64{},
		redo:      map[string]bool{},
		unsent:    map[string]*outbox{},
		answered:  map[string]bool{},
		pressed:   map[msgRef]pressRecord{},
		owners:    map[msgRef]ownerRecord{},
		refused:   map[int64]time.Time{},
		questions: questions.New(cfg.Now),
	}
	return c, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

func checkSecret(s string) error {
	if s == "" || len(s) > 256 {
		return errors.New("telegram: webhook mode needs SecretToken of 1-256 characters")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return errors.New("telegram: SecretToken may hold only A-Z, a-z, 0-9, _ and -")
		}
	}
	return nil
}

// WebhookURL is the URL Run registers with setWebhook (webhook mode).
func (c *Channel) WebhookURL() string { return c.cfg.PublicURL + c.cfg.WebhookPath }

// Run registers the webhook (webhook mode) or long-polls getUpdates
// (polling mode), and processes the inbox, including what an earlier
// process accepted and did not finish. It returns nil when ctx ends, after
// the running turns have finished, or an error if the webhook cannot be
// registered or polling is refused for good (a wrong token). Calling Run
// twice is an error.
func (c *Channel) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.cfg.Mode == ModeWebhook {
		if err := c.registerWebhook(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	c.learnUsername(ctx)
	var (
		wg      sync.WaitGroup
		pollErr error
	)
	wg.Go(func() { c.dispatch(ctx) })
	if c.cfg.Mode == ModePolling {
		wg.Go(func() {
			if err := c.poll(ctx); err != nil {
				pollErr = err
				cancel()
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	c.workers.Wait()
	return pollErr
}

func (c *Channel) registerWebhook(ctx context.Context) error {
	params := map[string]any{
		"url":             c.WebhookURL(),
		"secret_token":    c.cfg.SecretToken,
		"allowed_updates": allowedUpdates,
	}
	return c.retryCall(ctx, "setWebhook", func(ctx context.Context) error {
		return c.api.call(ctx, "setWebhook", params, nil)
	})
}

// learnUsername asks getMe for the bot's username, used to drop the bot's
// own @mention from group messages. Without it mentions stay in the text.
func (c *Channel) learnUsername(ctx context.Context) {
	var me struct {
		Username string `json:"username"`
	}
	if err := c.api.call(ctx, "getMe", map[string]any{}, &me); err != nil {
		c.cfg.Logger.Warn("telegram: getMe failed; bot mentions stay in messages", "err", err)
		return
	}
	c.username.Store(&me.Username)
}

// retryCall repeats a call on transient errors with backoff, up to five
// times, and returns a permanent error at once.
func (c *Channel) retryCall(ctx context.Context, what string, call func(context.Context) error) error {
	var err error
	for attempt := range 5 {
		if err = call(ctx); err == nil {
			return nil
		}
		retry, after := transient(err)
		if !retry {
			return fmt.Errorf("telegram %s: %w", what, err)
		}
		c.cfg.Logger.Warn("telegram call failed, retrying", "method", what, "attempt", attempt+1, "err", err)
		if wait.Sleep(ctx, max(after, backoff(c.cfg.RetryBackoff, attempt+1))) != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("telegram %s: %w", what, err)
}

// ServeHTTP is the webhook: it checks the secret header (401 when missing
// or wrong), reads one update (400 when oversized or malformed), stores it
// in the inbox and answers 200 (503 when the inbox is down, so Telegram
// delivers it again). It never waits for a turn.
func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Mode != ModeWebhook {
		http.Error(w, "webhook disabled: the channel polls", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if !c.secretOK(r) {
		http.Error(w, "wrong or missing secret token", http.StatusUnauthorized)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, c.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("update larger than %d bytes", c.cfg.MaxBodyBytes), http.StatusBadRequest)
			return
		}
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	u, rt, err := decodeUpdate(raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !rt.relevant {
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), DefaultAcceptTimeout)
	defer cancel()
	if _, err := c.accept(ctx, raw, u, rt); err != nil {
		c.cfg.Logger.Warn("telegram: inbox accept failed", "update", u.UpdateID, "err", err)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "inbox unavailable", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// secretOK compares the header with the secret in constant time (hashes,
// so the time does not depend on the length or a matching prefix either).
func (c *Channel) secretOK(r *http.Request) bool {
	vals := r.Header.Values("X-Telegram-Bot-Api-Secret-Token")
	if len(vals) != 1 || vals[0] == "" {
		return false
	}
	got := sha256.Sum256([]byte(vals[0]))
	return subtle.ConstantTimeCompare(got[:], c.secretSum[:]) == 1
}

// accept stores one decoded update in the inbox and wakes the processor.
func (c *Channel) accept(ctx context.Context, raw []byte, u *update, rt routing) (fresh bool, err error) {
	if c.answerQuestion(u, rt) {
		return false, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return false, fmt.Errorf("compact update %d: %w", u.UpdateID, err)
	}
	item := store.ChannelItem{
		Channel:    ChannelName,
		ID:         itemID(rt.chatID, u.UpdateID),
		OrderKey:   orderKey(rt.chatID, rt.userID),
		Payload:    buf.Bytes(),
		AcceptedAt: c.cfg.Now(),
	}
	fresh, err = c.cfg.Inbox.Accept(ctx, item)
	if err != nil {
		return false, fmt.Errorf("accept %s: %w", item.ID, err)
	}
	if fresh {
		c.poke()
	}
	return fresh, nil
}

// poke wakes the processor without blocking.
func (c *Channel) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// poll long-polls getUpdates and accepts every update before moving the
// offset past it.
func (c *Channel) poll(ctx context.Context) error {
	// getUpdates is refused while a webhook is set.
	if err := c.retryCall(ctx, "deleteWebhook", func(ctx context.Context) error {
		return c.api.call(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil)
	}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var offset int64
	failures := 0
	for ctx.Err() == nil {
		var raws []json.RawMessage
		params := map[string]any{"offset": offset, "limit": 100, "timeout": int(c.cfg.PollTimeout / time.Second), "allowed_updates": allowedUpdates}
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.PollTimeout+15*time.Second)
		err := c.api.call(callCtx, "getUpdates", params, &raws)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ae *apiError
			if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
				return fmt.Errorf("telegram getUpdates: %w", err)
			}
			failures++
			_, after := transient(err)
			c.cfg.Logger.Warn("telegram: getUpdates failed", "err", err)
			_ = wait.Sleep(ctx, max(after, backoff(c.cfg.RetryBackoff, failures)))
			continue
		}
		failures = 0
		for _, raw := range raws {
			var head struct {
				UpdateID int64 `json:"update_id"`
			}
			if json.Unmarshal(raw, &head) != nil {
				continue
			}
			if err := c.acceptPolled(ctx, raw); err != nil {
				return nil // ctx ended; the update comes again next time
			}
			offset = max(offset, head.UpdateID+1)
		}
	}
	return nil
}

// acceptPolled accepts one polled update, retrying while the inbox is down;
// it fails only when ctx ends.
func (c *Channel) acceptPolled(ctx context.Context, raw []byte) error {
	u, rt, err := decodeUpdate(raw)
	if err != nil {
		c.cfg.Logger.Warn("telegram: skipping a malformed update", "err", err)
		return nil
	}
	if !rt.relevant {
		return nil
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, DefaultAcceptTimeout)
		_, err := c.accept(actx, raw, u, rt)
		cancel()
		if err == nil {
			return nil
		}
		c.cfg.Logger.Warn("telegram: inbox accept failed", "update", u.UpdateID, "err", err)
		if wait.Sleep(ctx, backoff(c.cfg.RetryBackoff, attempt)) != nil {
			return ctx.Err()
		}
	}
}

// backoff is base doubled per attempt after the first, capped at 30 s.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
