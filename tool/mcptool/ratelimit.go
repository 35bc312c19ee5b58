package mcptool

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Rate is a token bucket: at most Calls calls in a burst, refilled at Calls
// per Per. The zero Rate is unlimited.
type Rate struct {
	Calls int
	Per   time.Duration
}

func (r Rate) unlimited() bool { return r.Calls <= 0 }

func (r Rate) validate() error {
	if r.Calls < 0 {
		return fmt.Errorf("rate: negative calls")
	}
	if r.Calls > 0 && r.Per <= 0 {
		return fmt.Errorf("rate: %d calls need a positive period", r.Calls)
	}
	return nil
}

// RateLimits bounds how often a server's tools may be called.
type RateLimits struct {
	// PerUser is one bucket per caller (tenant and user) across all tools
	// of the server.
	PerUser Rate
	// PerTool is one bucket per tool across all callers; a tool's
	// ToolPolicy.Rate overrides it.
	PerTool Rate
}

type bucket struct {
	tokens float64
	last   time.Time
}

// limiter holds the buckets of one server. Safe for concurrent use.
type limiter struct {
	mu    sync.Mutex
	users map[string]*bucket
	tools map[string]*bucket
}

// maxBuckets bounds the per-user map; beyond it, buckets that have filled
// up again (and so carry no state) are dropped.
const maxBuckets = 10000

func newLimiter() *limiter {
	return &limiter{users: map[string]*bucket{}, tools: map[string]*bucket{}}
}

// refill brings b up to date at now and reports its tokens.
func refill(b *bucket, r Rate, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(float64(r.Calls), b.tokens+elapsed.Seconds()*float64(r.Calls)/r.Per.Seconds())
		b.last = now
	}
}

func take(m map[string]*bucket, key string, r Rate, now time.Time) *bucket {
	b, ok := m[key]
	if !ok {
		b = &bucket{tokens: float64(r.Calls), last: now}
		m[key] = b
	}
	refill(b, r, now)
	return b
}

// wait is how long until b holds one token.
func wait(b *bucket, r Rate) time.Duration {
	missing := 1 - b.tokens
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing * float64(r.Per) / float64(r.Calls))
}

// allow takes one token from the user's and the tool's bucket, or none
// when either is empty; then it returns which limit refused ("user" or
// "tool") and how long until a retry could pass.
func (l *limiter) allow(user string, userRate Rate, toolName string, toolRate Rate, now time.Time) (string, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ub, tb *bucket
	if !userRate.unlimited() {
		if len(l.users) >= maxBuckets {
			l.prune(userRate, now)
		}
		ub = take(l.users, user, userRate, now)
		if ub.tokens < 1 {
			return "user", wait(ub, userRate)
		}
	}
	if !toolRate.unlimited() {
		tb = take(l.tools, toolName, toolRate, now)
		if tb.tokens < 1 {
			return "tool", wait(tb, toolRate)
		}
	}
	if ub != nil {
		ub.tokens--
	}
	if tb != nil {
		tb.tokens--
	}
	return "", 0
}

func (l *limiter) prune(r Rate, now time.Time) {
	for k, b := range l.users {
		refill(b, r, now)
		if b.tokens >= float64(r.Calls) {
			delete(l.users, k)
		}
	}
}
