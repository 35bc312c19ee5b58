package observe

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Label values that stand for a value that is not one.
const (
	// labelOther replaces a value once a label has seen its limit of
	// distinct values.
	labelOther = "other"
	// labelUnknown replaces an empty value.
	labelUnknown = "unknown"
)

// maxLabelLen caps the length of one label value, in bytes.
const maxLabelLen = 128

// Limits of distinct values per label. They bound the number of series a
// misbehaving input (a provider reporting a new model name per call, a
// flood of tenants) can create; values past a limit are counted as
// labelOther.
const (
	maxTenants   = 1000
	maxModels    = 256
	maxProviders = 64
	maxTools     = 512
	maxRoutes    = 64
	maxStatuses  = 64
	maxGuards    = 64
	maxReasons   = 64
	maxChannels  = 32
)

// limiter admits at most max distinct values of one label; later new
// values become labelOther. It is safe for concurrent use.
type limiter struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

func newLimiter(max int) *limiter {
	return &limiter{max: max, seen: make(map[string]struct{})}
}

// value returns v cleaned (valid UTF-8, at most maxLabelLen bytes, never
// empty) or labelOther when v would exceed the limit.
func (l *limiter) value(v string) string {
	v = cleanLabel(v)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; ok {
		return v
	}
	if len(l.seen) >= l.max {
		return labelOther
	}
	l.seen[v] = struct{}{}
	return v
}

// cleanLabel makes v a printable, bounded label value.
func cleanLabel(v string) string {
	if v == "" {
		return labelUnknown
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "?")
	}
	if len(v) > maxLabelLen {
		cut := maxLabelLen
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}

// oneOf returns v when it is among known, otherwise labelOther; empty is
// labelUnknown. It is for labels whose values the engine defines.
func oneOf[T ~string](v T, known ...T) string {
	if v == "" {
		return labelUnknown
	}
	for _, k := range known {
		if v == k {
			return string(v)
		}
	}
	return labelOther
}
