package cassette

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// scrubbed replaces every secret value written to a cassette.
const scrubbed = "[scrubbed]"

// minDerivedSecret is the shortest credential taken from a request that is
// also searched for elsewhere; shorter values are scrubbed only where found.
const minDerivedSecret = 8

// sensitiveHeaders are scrubbed whatever their name contains.
var sensitiveHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"X-Api-Key":           true,
	"Api-Key":             true,
	"Cookie":              true,
	"Set-Cookie":          true,
}

// sensitiveHeader reports whether the value of header name is scrubbed.
func sensitiveHeader(name string) bool {
	if sensitiveHeaders[http.CanonicalHeaderKey(name)] {
		return true
	}
	l := strings.ToLower(name)
	return strings.Contains(l, "key") || strings.Contains(l, "token") || strings.Contains(l, "secret")
}

// sensitiveParam reports whether the value of query parameter name is
// scrubbed.
func sensitiveParam(name string) bool {
	switch strings.ToLower(name) {
	case "key", "api_key", "apikey", "token":
		return true
	}
	return false
}

// scrubber holds the secrets given at construction. It is immutable and
// safe for concurrent use.
type scrubber struct {
	given []string  // the given secrets and their encoded forms
	base  *replacer // replaces only the given secrets
}

func newScrubber(secrets []string) *scrubber {
	s := &scrubber{given: secretForms(nil, secrets)}
	s.base = newReplacer(s.given)
	return s
}

// forRequest returns the replacer for one exchange: the given secrets plus
// the credentials carried by req.
func (s *scrubber) forRequest(req *http.Request) *replacer {
	derived := requestCredentials(req)
	if len(derived) == 0 {
		return s.base
	}
	return newReplacer(secretForms(slices.Clone(s.given), derived))
}

// requestCredentials returns the credentials of req that are long enough to
// be searched for: tokens of sensitive headers, sensitive query parameter
// values and the URL password.
func requestCredentials(req *http.Request) []string {
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= minDerivedSecret {
			out = append(out, v)
		}
	}
	for name, values := range req.Header {
		if !sensitiveHeader(name) {
			continue
		}
		for _, v := range values {
			add(v)
			if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				add(token) // "Bearer sk-..." -> "sk-..."
			}
			if http.CanonicalHeaderKey(name) == "Cookie" {
				for part := range strings.SplitSeq(v, ";") {
					if _, val, ok := strings.Cut(part, "="); ok {
						add(val)
					}
				}
			}
		}
	}
	if req.URL != nil {
		for part := range strings.SplitSeq(req.URL.RawQuery, "&") {
			name, val, _ := strings.Cut(part, "=")
			if sensitiveParam(unescapeQuery(name)) {
				add(unescapeQuery(val))
			}
		}
		if req.URL.User != nil {
			if p, ok := req.URL.User.Password(); ok {
				add(p)
			}
		}
	}
	return out
}

// secretForms appends to dst each non-empty secret with its
// percent-encoded and JSON-escaped forms.
func secretForms(dst, secrets []string) []string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		dst = append(dst, s, url.QueryEscape(s), url.PathEscape(s))
		// JSON string contents, with and without HTML escaping.
		plain := marshalString(s)
		dst = append(dst, string(plain[1:len(plain)-1]))
		if b, err := json.Marshal(s); err == nil {
			dst = append(dst, string(b[1:len(b)-1]))
		}
	}
	return dst
}

// replacer replaces secrets with the scrubbed marker.
type replacer struct {
	r *strings.Replacer // nil when there is nothing to replace
}

// newReplacer builds a replacer for the given strings, longest first so a
// secret that contains another one is replaced whole.
func newReplacer(secrets []string) *replacer {
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	secrets = slices.Compact(secrets)
	if len(secrets) == 0 {
		return &replacer{}
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, scrubbed)
	}
	return &replacer{r: strings.NewReplacer(pairs...)}
}

func (p *replacer) str(s string) string {
	if p.r == nil {
		return s
	}
	return p.r.Replace(s)
}

func (p *replacer) bytes(b []byte) []byte {
	if p.r == nil || len(b) == 0 {
		return b
	}
	return []byte(p.r.Replace(string(b)))
}

// header returns a scrubbed copy of h: sensitive headers get the marker,
// the others have their secrets replaced.
func (p *replacer) header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		vs := make([]string, len(values))
		for i, v := range values {
			if sensitiveHeader(name) {
				vs[i] = scrubbed
			} else {
				vs[i] = p.str(v)
			}
		}
		out[name] = vs
	}
	return out
}

// url returns the scrubbed form of u: URL password and sensitive query
// parameters get the marker, then secrets are replaced anywhere.
func (p *replacer) url(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		if _, ok := c.User.Password(); ok {
			c.User = url.UserPassword(c.User.Username(), scrubbed)
		}
	}
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, part := range parts {
			name, _, _ := strings.Cut(part, "=")
			if sensitiveParam(unescapeQuery(name)) {
				parts[i] = name + "=" + scrubbed
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	return p.str(c.String())
}

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
