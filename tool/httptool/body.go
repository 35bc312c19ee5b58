package httptool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// redactedMark replaces a secret found in a result or an error.
const redactedMark = "[redacted]"

// minSecretLen is the shortest value searched for: shorter ones cannot be
// told from ordinary data (a version number, a flag).
const minSecretLen = 8

// maxMessageRunes bounds a message taken from a response body.
const maxMessageRunes = 300

// errorBodyLimit bounds how much of a non-2xx body is read for its message.
const errorBodyLimit = 8 << 10

// publicHeaders are static headers whose values are not secrets.
var publicHeaders = map[string]bool{"Accept": true, "Accept-Language": true, "User-Agent": true}

// redactor removes the tool's secrets (static header values, credentials
// inside them, URL query values) from text bound for a Result or an error.
// It is immutable and safe for concurrent use.
type redactor struct {
	secrets [][]byte // longest first, so a value is replaced before its parts
	longest int
}

func newRedactor(headers http.Header, u *url.URL) *redactor {
	seen := map[string]bool{}
	r := &redactor{}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) < minSecretLen {
			return
		}
		forms := []string{s}
		if enc, err := json.Marshal(s); err == nil {
			forms = append(forms, string(enc[1:len(enc)-1])) // as it appears inside a JSON string
		}
		for _, f := range forms {
			if !seen[f] {
				seen[f] = true
				r.secrets = append(r.secrets, []byte(f))
				r.longest = max(r.longest, len(f))
			}
		}
	}
	for name, values := range headers {
		if publicHeaders[name] {
			continue
		}
		for _, v := range values {
			add(v)
			// "Bearer <token>", "Basic <base64 of user:password>".
			scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
			if !ok {
				continue
			}
			add(cred)
			if strings.EqualFold(scheme, "Basic") {
				if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
					add(string(dec))
					if _, pw, ok := strings.Cut(string(dec), ":"); ok {
						add(pw)
					}
				}
			}
		}
	}
	for _, values := range u.Query() {
		for _, v := range values {
			add(v)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// bytes returns b with every secret replaced; b itself is not modified.
func (r *redactor) bytes(b []byte) []byte {
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(redactedMark))
		}
	}
	return b
}

func (r *redactor) string(s string) string { return string(r.bytes([]byte(s))) }

// safeCut returns a cut point at most n into b that does not split an
// occurrence of a secret, so no prefix of a secret survives the cut. b
// must extend at least r.longest bytes past n when it is longer than n.
func (r *redactor) safeCut(b []byte, n int) int {
	if n >= len(b) {
		return len(b)
	}
	for changed := true; changed; {
		changed = false
		for _, s := range r.secrets {
			from := max(0, n-len(s)+1)
			if i := bytes.Index(b[from:], s); i >= 0 && from+i < n && from+i+len(s) > n {
				n, changed = from+i, true
			}
		}
	}
	return n
}

// readBody reads at most limit bytes of body, plus enough beyond to know
// whether more followed and to cut without splitting a secret. The body
// is returned redacted; over reports that it was longer than limit, in
// which case the returned bytes are a prefix of at most limit bytes before
// redaction.
func (r *redactor) readBody(body io.Reader, limit int) (data []byte, over bool, err error) {
	buf, err := io.ReadAll(io.LimitReader(body, int64(limit+r.longest+1)))
	if err != nil {
		return nil, false, err
	}
	if len(buf) > limit {
		return r.bytes(buf[:r.safeCut(buf, limit)]), true, nil
	}
	return r.bytes(buf), false, nil
}

// truncated is the Data of an answer cut to fit the result limit.
type truncated struct {
	Truncated bool   `json:"truncated"`
	Bytes     int64  `json:"bytes,omitempty"` // the full size, when the endpoint declared it
	Limit     int    `json:"limit"`
	Partial   string `json:"partial"` // the beginning of the answer, as text
}

// resultData turns a (redacted) body into Result data of at most limit
// encoded bytes: the JSON as is, other text as a JSON string, and an
// answer that is over the limit (or encodes larger than it) as a truncated
// marker holding as much of its beginning as fits. An empty body is nil.
// cut reports whether the data was truncated.
func resultData(body []byte, over bool, declared int64, limit int) (data json.RawMessage, cut bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 && !over {
		return nil, false
	}
	if !over {
		if json.Valid(trimmed) {
			data = trimmed
		} else {
			data = encodeJSON(string(trimmed))
		}
		if len(data) <= limit {
			return data, false
		}
	}
	if declared < 0 {
		declared = 0
	}
	return truncatedData(trimmed, declared, limit), true
}

// truncatedData encodes the marker with the longest beginning of prefix
// whose encoding fits in limit (escapes make the encoded text longer than
// the raw one, so the fit is searched for).
func truncatedData(prefix []byte, declared int64, limit int) json.RawMessage {
	encode := func(n int) json.RawMessage {
		return encodeJSON(truncated{Truncated: true, Bytes: declared, Limit: limit, Partial: string(validPrefix(prefix, n))})
	}
	if enc := encode(len(prefix)); len(enc) <= limit {
		return enc
	}
	lo, hi := 0, len(prefix)-1 // the longest fitting length is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(encode(mid)) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return encode(lo)
}

// validPrefix returns b cut to at most n bytes at a rune boundary.
func validPrefix(b []byte, n int) []byte {
	if n >= len(b) {
		n = len(b)
	} else {
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
	}
	return b[:n]
}

// encodeJSON encodes v compactly without escaping HTML characters.
func encodeJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(`null`)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// successText is the "text" or "message" string field of a JSON object
// body, cleaned for display; "" if there is none.
func successText(body []byte) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	for _, k := range []string{"text", "message"} {
		if s := stringField(obj, k); s != "" {
			return clean(s)
		}
	}
	return ""
}

// errorMessage finds the explanation in an error body: a JSON object's
// "message", "detail", "error_description", "error" (a string or an object
// with a message) or "title"; a JSON string; or a text/plain body. "" if
// there is none.
func errorMessage(body []byte, contentType string) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		for _, k := range []string{"message", "detail", "error_description", "error", "title"} {
			if s := stringField(obj, k); s != "" {
				return clean(s)
			}
		}
		var inner map[string]json.RawMessage
		if raw, ok := obj["error"]; ok && json.Unmarshal(raw, &inner) == nil {
			for _, k := range []string{"message", "detail"} {
				if s := stringField(inner, k); s != "" {
					return clean(s)
				}
			}
		}
		return ""
	}
	var s string
	if json.Unmarshal(body, &s) == nil {
		return clean(s)
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "text/plain" {
		return clean(string(body))
	}
	return ""
}

func stringField(obj map[string]json.RawMessage, key string) string {
	raw, ok := obj[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// clean makes s one line of at most maxMessageRunes runes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) <= maxMessageRunes {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxMessageRunes-1])) + "…"
}
