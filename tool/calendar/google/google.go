// Package google is the Google Calendar backend of the calendar tools
// (calendar.Backend): free/busy, events booked once per key, each user
// acting with their own OAuth token. It lives in a module of its own so
// that the Google API client stays out of the engine's module graph.
package google

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/arbiterhq/arbiter/tool/calendar"
	gcal "google.golang.org/api/calendar/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// DefaultBaseURL is the Google Calendar API root.
const DefaultBaseURL = "https://www.googleapis.com/calendar/v3/"

// Config configures the Google Calendar backend. Zero values select
// the documented defaults.
type Config struct {
	// Tokens returns the OAuth token source of a user (with a calendar
	// scope), ok false when the user has not connected Google Calendar.
	// StaticToken wraps a bare access token. Required; must be safe for
	// concurrent use.
	Tokens func(tenant, user string) (oauth2.TokenSource, bool)
	// BaseURL is the API root; tests point it at a local fake. Default
	// DefaultBaseURL.
	BaseURL string
	// HTTPClient carries the requests (its Transport and Timeout are used;
	// the token is added per request). Default http.DefaultClient.
	HTTPClient *http.Client
	// SendUpdates tells Google whom to notify of a new event: "all",
	// "externalOnly" or "none". Default "all".
	SendUpdates string
	// MaxAttempts bounds the tries of one request that meets a rate limit
	// (429, or 403 rateLimitExceeded), a 5xx or a transport failure.
	// Default 4.
	MaxAttempts int
	// Backoff is the first wait between tries, doubling up to MaxBackoff; a
	// Retry-After header is honoured up to MaxBackoff. No wait outlasts the
	// context's deadline. Defaults 500ms and 8s.
	Backoff, MaxBackoff time.Duration
}

// Google is the Google Calendar backend: free/busy through freeBusy.query
// and bookings through events.insert on the organizer's primary calendar,
// each request made with the acting user's OAuth token. Other members'
// calendars are named by calendar.Member.Email. It is safe for concurrent use.
type Google struct {
	svc         *gcal.Service
	tokens      func(tenant, user string) (oauth2.TokenSource, bool)
	sendUpdates string
	attempts    int
	backoff     time.Duration
	maxBackoff  time.Duration
}

var _ calendar.Backend = (*Google)(nil)

// StaticToken is a token source that always returns the access token
// given, for callers that keep bare access tokens.
func StaticToken(access string) oauth2.TokenSource {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: access, TokenType: "Bearer"})
}

// NewGoogle validates cfg and builds the backend. It returns an error for a
// missing Tokens function, an unknown SendUpdates value or negative
// limits; it makes no request.
func New(cfg Config) (*Google, error) {
	if cfg.Tokens == nil {
		return nil, errors.New("calendar: Config.Tokens is required")
	}
	g := &Google{tokens: cfg.Tokens, sendUpdates: cfg.SendUpdates, attempts: cfg.MaxAttempts,
		backoff: cfg.Backoff, maxBackoff: cfg.MaxBackoff}
	switch g.sendUpdates {
	case "":
		g.sendUpdates = "all"
	case "all", "externalOnly", "none":
	default:
		return nil, fmt.Errorf("calendar: unknown SendUpdates %q (all, externalOnly or none)", cfg.SendUpdates)
	}
	if g.attempts < 0 || g.backoff < 0 || g.maxBackoff < 0 {
		return nil, errors.New("calendar: Google retry limits must not be negative")
	}
	if g.attempts == 0 {
		g.attempts = 4
	}
	if g.backoff == 0 {
		g.backoff = 500 * time.Millisecond
	}
	if g.maxBackoff == 0 {
		g.maxBackoff = 8 * time.Second
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client := &http.Client{Transport: tokenTransport{next: next}, Timeout: hc.Timeout,
		CheckRedirect: hc.CheckRedirect, Jar: hc.Jar}
	// The service is shared; each request carries its user's token in its
	// context, which tokenTransport reads.
	svc, err := gcal.NewService(context.Background(), option.WithHTTPClient(client), option.WithEndpoint(base))
	if err != nil {
		return nil, fmt.Errorf("calendar: google client: %w", err)
	}
	g.svc = svc
	return g, nil
}

// Kind returns "google".
func (g *Google) Kind() string { return "google" }

// LinkHosts are the hosts of the events' links (htmlLink, with the event's
// id in the query): replies may keep those links whole.
func (g *Google) LinkHosts() []string { return []string{"www.google.com", "calendar.google.com"} }

type tokenKey struct{}

// tokenTransport authorizes each request with the token source its
// context carries.
type tokenTransport struct{ next http.RoundTripper }

func (t tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ts, _ := req.Context().Value(tokenKey{}).(oauth2.TokenSource)
	if ts == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, calendar.ErrNotConnected
	}
	return (&oauth2.Transport{Source: ts, Base: t.next}).RoundTrip(req)
}

// as returns ctx carrying user's token, or calendar.ErrNotConnected.
func (g *Google) as(ctx context.Context, tenant string, user calendar.Member) (context.Context, error) {
	ts, ok := g.tokens(tenant, user.ID)
	if !ok || ts == nil {
		return nil, fmt.Errorf("google calendar of %s: %w", user.Name, calendar.ErrNotConnected)
	}
	return context.WithValue(ctx, tokenKey{}, ts), nil
}

// calendarID names m's calendar: its e-mail, or "primary" for the acting
// user without one.
func calendarID(m calendar.Member, acting bool) (string, error) {
	switch {
	case m.Email != "":
		return m.Email, nil
	case acting:
		return "primary", nil
	}
	return "", fmt.Errorf("no Google calendar is known for %s (no e-mail): %w", m.Name, calendar.ErrNotFound)
}

// Busy asks freeBusy.query, with the caller's token, for the busy time of
// every member of who in one request. A calendar Google reports as not
// found makes the whole answer an error wrapping calendar.ErrNotFound: without it
// no slot could be trusted.
func (g *Google) Busy(ctx context.Context, tenant string, caller calendar.Member, who []calendar.Member, span calendar.Interval) (map[string][]calendar.Interval, error) {
	actx, err := g.as(ctx, tenant, caller)
	if err != nil {
		return nil, err
	}
	req := &gcal.FreeBusyRequest{TimeMin: calendar.UTCStamp(span.Start), TimeMax: calendar.UTCStamp(span.End), TimeZone: "UTC"}
	ids := make([]string, len(who))
	for i, m := range who {
		if ids[i], err = calendarID(m, m.ID == caller.ID); err != nil {
			return nil, err
		}
		req.Items = append(req.Items, &gcal.FreeBusyRequestItem{Id: ids[i]})
	}
	var resp *gcal.FreeBusyResponse
	err = g.retry(ctx, func() (err error) {
		resp, err = g.svc.Freebusy.Query(req).Context(actx).Do()
		return err
	})
	if err != nil {
		return nil, classify("free/busy", err)
	}
	out := make(map[string][]calendar.Interval, len(who))
	for i, m := range who {
		cal, ok := resp.Calendars[ids[i]]
		if !ok {
			return nil, fmt.Errorf("free/busy: Google returned nothing for the calendar of %s", m.Name)
		}
		for _, e := range cal.Errors {
			if e == nil {
				continue
			}
			if e.Reason == "notFound" {
				return nil, fmt.Errorf("free/busy of %s (%s): %w", m.Name, ids[i], calendar.ErrNotFound)
			}
			return nil, fmt.Errorf("free/busy of %s (%s): %s", m.Name, ids[i], e.Reason)
		}
		for _, p := range cal.Busy {
			if p == nil {
				continue
			}
			s, err1 := time.Parse(time.RFC3339, p.Start)
			e, err2 := time.Parse(time.RFC3339, p.End)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("free/busy of %s: %w", m.Name, err)
			}
			out[m.ID] = append(out[m.ID], calendar.Interval{Start: s.UTC(), End: e.UTC()})
		}
	}
	return out, nil
}

// googleEventID derives the event id of a keyed booking: SHA-256 of the
// tenant, organizer and key in base32hex (52 characters of 0-9a-v), the
// form Google accepts for client-chosen ids. A retried insert reuses the id
// and Google refuses the duplicate with 409.
func googleEventID(tenant, organizer, key string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + organizer + "\x00" + key))
	return calendar.EventIDEncoding.EncodeToString(sum[:])
}

// Book inserts ev on the organizer's primary calendar with the others as
// attendees. The event id comes from key (or is random when key is empty),
// so every try of the insert names the same event: a 409 means an earlier
// try or call created it, and that event is returned with replayed true.
func (g *Google) Book(ctx context.Context, tenant string, organizer calendar.Member, ev calendar.NewEvent, key string) (calendar.Event, bool, error) {
	actx, err := g.as(ctx, tenant, organizer)
	if err != nil {
		return calendar.Event{}, false, err
	}
	id := googleEventID(tenant, organizer.ID, key)
	if key == "" {
		if id, err = calendar.NewEventID(); err != nil {
			return calendar.Event{}, false, err
		}
	}
	loc, err := calendar.LoadZone(ev.Timezone)
	if err != nil {
		loc = time.UTC
	}
	body := &gcal.Event{
		Id:          id,
		Summary:     ev.Title,
		Description: ev.Description,
		Start:       &gcal.EventDateTime{DateTime: ev.Start.In(loc).Format(time.RFC3339), TimeZone: loc.String()},
		End:         &gcal.EventDateTime{DateTime: ev.End.In(loc).Format(time.RFC3339), TimeZone: loc.String()},
	}
	for _, m := range ev.Attendees {
		cid, err := calendarID(m, false)
		if err != nil {
			return calendar.Event{}, false, err
		}
		body.Attendees = append(body.Attendees, &gcal.EventAttendee{Email: cid, DisplayName: m.Name})
	}
	var got *gcal.Event
	err = g.retry(ctx, func() (err error) {
		got, err = g.svc.Events.Insert("primary", body).SendUpdates(g.sendUpdates).Context(actx).Do()
		return err
	})
	if code(err) == http.StatusConflict {
		prior, ok, gerr := g.get(ctx, actx, organizer, id)
		switch {
		case gerr != nil:
			return calendar.Event{}, false, gerr
		case !ok:
			return calendar.Event{}, false, fmt.Errorf("book: event %s was created and then deleted; not booking it again", id)
		}
		return prior, true, nil
	}
	if err != nil {
		return calendar.Event{}, false, classify("book", err)
	}
	return fromGoogle(got, organizer, ev.Attendees), false, nil
}

// Booked returns the event booked under key, if it exists and was not
// cancelled.
func (g *Google) Booked(ctx context.Context, tenant string, organizer calendar.Member, key string) (calendar.Event, bool, error) {
	if key == "" {
		return calendar.Event{}, false, nil
	}
	actx, err := g.as(ctx, tenant, organizer)
	if err != nil {
		return calendar.Event{}, false, err
	}
	return g.get(ctx, actx, organizer, googleEventID(tenant, organizer.ID, key))
}

func (g *Google) get(ctx, actx context.Context, organizer calendar.Member, id string) (calendar.Event, bool, error) {
	var got *gcal.Event
	err := g.retry(ctx, func() (err error) {
		got, err = g.svc.Events.Get("primary", id).Context(actx).Do()
		return err
	})
	switch c := code(err); {
	case c == http.StatusNotFound || c == http.StatusGone:
		return calendar.Event{}, false, nil
	case err != nil:
		return calendar.Event{}, false, classify("read event", err)
	case got.Status == "cancelled":
		return calendar.Event{}, false, nil
	}
	return fromGoogle(got, organizer, nil), true, nil
}

// Upcoming lists the user's primary calendar over span, recurring events
// expanded, cancelled ones left out.
func (g *Google) Upcoming(ctx context.Context, tenant string, user calendar.Member, span calendar.Interval, limit int) ([]calendar.Event, error) {
	actx, err := g.as(ctx, tenant, user)
	if err != nil {
		return nil, err
	}
	var got *gcal.Events
	err = g.retry(ctx, func() (err error) {
		got, err = g.svc.Events.List("primary").TimeMin(calendar.UTCStamp(span.Start)).TimeMax(calendar.UTCStamp(span.End)).
			SingleEvents(true).OrderBy("startTime").MaxResults(int64(max(limit, 1))).Context(actx).Do()
		return err
	})
	if err != nil {
		return nil, classify("list events", err)
	}
	var out []calendar.Event
	for _, it := range got.Items {
		if it == nil || it.Status == "cancelled" {
			continue
		}
		out = append(out, fromGoogle(it, user, nil))
	}
	return out, nil
}

// fromGoogle converts an event resource. An all-day event spans its dates
// in the event's (or UTC's) zone. Attendees known as members get their ids.
func fromGoogle(it *gcal.Event, owner calendar.Member, known []calendar.Member) calendar.Event {
	e := calendar.Event{ID: it.Id, Title: it.Summary, Description: it.Description, Organizer: owner.ID, URL: it.HtmlLink}
	e.Start, e.Timezone = googleTime(it.Start)
	e.End, _ = googleTime(it.End)
	byEmail := map[string]calendar.Member{}
	for _, m := range append([]calendar.Member{owner}, known...) {
		if m.Email != "" {
			byEmail[strings.ToLower(m.Email)] = m
		}
	}
	for _, a := range it.Attendees {
		if a == nil {
			continue
		}
		at := calendar.Attendee{Name: a.DisplayName, Email: a.Email}
		if m, ok := byEmail[strings.ToLower(a.Email)]; ok {
			at.ID, at.Name = m.ID, m.Name
		} else if a.Self {
			at.ID, at.Name = owner.ID, owner.Name
		}
		e.Attendees = append(e.Attendees, at)
	}
	return e
}

func googleTime(t *gcal.EventDateTime) (time.Time, string) {
	if t == nil {
		return time.Time{}, ""
	}
	if at, err := time.Parse(time.RFC3339, t.DateTime); err == nil {
		return at.UTC(), t.TimeZone
	}
	loc, err := calendar.LoadZone(t.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	if d, err := time.Parse(time.DateOnly, t.Date); err == nil {
		return calendar.StartOfDay(d.Year(), d.Month(), d.Day(), loc), loc.String()
	}
	return time.Time{}, t.TimeZone
}

// code is the HTTP status of a Google API error, 0 for other errors.
func code(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// classify wraps a failed request: refused credentials as
// calendar.ErrAccessDenied, a missing calendar or event as calendar.ErrNotFound.
func classify(what string, err error) error {
	var re *oauth2.RetrieveError
	switch c := code(err); {
	case errors.Is(err, calendar.ErrNotConnected):
		return err
	case errors.As(err, &re), c == http.StatusUnauthorized, c == http.StatusForbidden && !rateLimited(err):
		return fmt.Errorf("%s: %w: %w", what, calendar.ErrAccessDenied, err)
	case c == http.StatusNotFound, c == http.StatusGone:
		return fmt.Errorf("%s: %w: %w", what, calendar.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// retryDelay reports whether err is worth another try and how long the
// server asked to wait (0 for no preference).
func retryDelay(err error) (time.Duration, bool) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, calendar.ErrNotConnected) {
		return 0, false
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return 0, false
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return 0, true // transport failure: the request may not have arrived
	}
	switch ge.Code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	case http.StatusForbidden:
		if !rateLimited(err) {
			return 0, false
		}
	default:
		return 0, false
	}
	return retryAfter(ge.Header.Get("Retry-After")), true
}

// rateLimited reports whether err is Google's 403 for a rate limit.
func rateLimited(err error) bool {
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusForbidden {
		return false
	}
	for _, e := range ge.Errors {
		if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
			return true
		}
	}
	return false
}

// retryAfter reads a Retry-After value: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retry runs f until it succeeds, fails for good, uses up the attempts or
// the next wait would outlast ctx; it returns f's last error.
func (g *Google) retry(ctx context.Context, f func() error) error {
	wait := g.backoff
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		asked, again := retryDelay(err)
		if !again || attempt >= g.attempts {
			return err
		}
		delay := wait
		if asked > 0 {
			delay = asked
		}
		delay = min(delay, g.maxBackoff)
		wait = min(2*wait, g.maxBackoff)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
