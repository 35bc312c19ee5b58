// Package cassette records the HTTP exchanges between arbiter and its model
// providers into a directory of JSON files ("cassettes"), and replays them
// later without touching the network. Both halves are http.RoundTrippers:
// put a *Recorder or a *Replayer in the *http.Client a provider's Config
// takes.
//
// # Format
//
// A cassette directory holds one file per exchange, named
// NNNNNN-HOST-PATH.json (for example 000001-api.openai.com-v1-chat-completions.json),
// where NNNNNN is the recording sequence number, so a directory listing sorts
// in recording order (up to 999999 exchanges; larger numbers still replay in
// numeric order). Other files, such as an index or notes, are ignored. A
// file is indented JSON:
//
//	{
//	  "version": 1,
//	  "recorded_at": "2026-05-01T10:00:00.123456789Z",
//	  "duration_ms": 412,
//	  "request": {
//	    "method": "POST",
//	    "url": "https://api.openai.com/v1/chat/completions",
//	    "headers": {"Authorization": "[scrubbed]", "Content-Type": "application/json"},
//	    "body_format": "json",
//	    "body": {"model": "gpt-4o-mini", "messages": [...]}
//	  },
//	  "response": {
//	    "status": 200,
//	    "headers": {"Content-Type": "application/json", "Retry-After": "7"},
//	    "body_format": "json",
//	    "body_indent": "  ",
//	    "body_trailer": "\n",
//	    "body": {"id": "chatcmpl-1", "choices": [...]}
//	  }
//	}
//
// duration_ms is the time from sending the request to receiving the response
// headers (or the error). A body is stored with body_format "json" (the JSON
// value itself, so diffs stay readable), "text" (a JSON string) or "base64"
// (bytes that are not UTF-8); no body means an empty one. A JSON body is
// kept as JSON only when its exact bytes can be rebuilt from it: compacted,
// then re-indented with body_indent when set, then followed by body_trailer
// (trailing white space). Any other layout is stored as text, so a replay
// always returns the recorded bytes.
//
// A streamed answer (text/event-stream) is stored as text, the events as
// they arrived, and replayed in one piece: the timing between chunks is not
// kept. A stream that broke is stored up to the break, with its
// "body_error", and replays the same way.
//
// An exchange whose transport failed has "error": {"message", "kind"}
// instead of "response". A response whose body failed while being read has
// "body_error" next to the part that was read; one whose body the caller
// closed before its end has "body_incomplete": true next to the part that
// was read. Kinds are "timeout", "deadline_exceeded", "canceled",
// "unexpected_eof", "eof", "connection_reset", "connection_refused", or
// absent when the error was none of these.
//
// # Scrubbing
//
// Nothing is written before it is scrubbed. The values of the headers
// Authorization, Proxy-Authorization, X-Api-Key, Api-Key, Cookie and
// Set-Cookie and of every header whose name contains "key", "token" or
// "secret" (any case) become "[scrubbed]"; so do the URL query parameters
// key, api_key, apikey and token and a password in the URL. Then every
// occurrence of a secret is replaced by "[scrubbed]" in the URL, the other
// header values, both bodies and error messages. The secrets are the ones
// given to NewRecorder plus the credentials found in the request itself
// (the token of an Authorization header, the values of the scrubbed request
// headers, query parameters and URL password), the latter only when at
// least 8 bytes long so that short values do not mangle unrelated text.
// Each secret is also looked for in its percent-encoded and JSON-escaped
// forms. Note that rate-limit headers such as x-ratelimit-remaining-tokens
// contain "token" and are therefore scrubbed too.
//
// # Scope
//
// The package holds the two transports, the file format and the scrubbing
// rules. It does not know providers, llm types or command-line flags; it
// does not retry, edit or validate exchanges; it holds whole bodies in
// memory (fine for model calls, not for large uploads or protocol
// upgrades); and a Replayer matches requests by method, host and path only
// (preferring an identical body), never by query or headers.
package cassette

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// formatVersion is the "version" of the files this package writes and the
// only one it reads.
const formatVersion = 1

// Body formats.
const (
	formatJSON   = "json"
	formatText   = "text"
	formatBase64 = "base64"
)

// Error kinds stored with recorded errors; see the package comment.
const (
	kindTimeout       = "timeout"
	kindDeadline      = "deadline_exceeded"
	kindCanceled      = "canceled"
	kindUnexpectedEOF = "unexpected_eof"
	kindEOF           = "eof"
	kindReset         = "connection_reset"
	kindRefused       = "connection_refused"
)

// exchangeFile is the content of one cassette file.
type exchangeFile struct {
	Version    int             `json:"version"`
	RecordedAt time.Time       `json:"recorded_at"`
	DurationMS int64           `json:"duration_ms"`
	Request    requestRecord   `json:"request"`
	Response   *responseRecord `json:"response,omitempty"`
	Error      *errorRecord    `json:"error,omitempty"`
}

type requestRecord struct {
	Method  string       `json:"method"`
	URL     string       `json:"url"`
	Headers headerRecord `json:"headers,omitempty"`
	bodyRecord
}

type responseRecord struct {
	Status         int          `json:"status"`
	Headers        headerRecord `json:"headers,omitempty"`
	BodyIncomplete bool         `json:"body_incomplete,omitempty"`
	BodyError      *errorRecord `json:"body_error,omitempty"`
	bodyRecord
}

type errorRecord struct {
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"`
}

// headerRecord is an http.Header as stored: a header with one value is a
// string, one with several an array of strings. Names are canonicalized on
// load.
type headerRecord http.Header

func (h headerRecord) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(h))
	for name, values := range h {
		if len(values) == 1 {
			m[name] = values[0]
		} else {
			m[name] = values
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (h *headerRecord) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	out := make(http.Header, len(m))
	for name, raw := range m {
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			out.Add(name, one)
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return fmt.Errorf("header %s: want a string or an array of strings", name)
		}
		for _, v := range many {
			out.Add(name, v)
		}
	}
	*h = headerRecord(out)
	return nil
}

// bodyRecord is a body as stored; see the package comment.
type bodyRecord struct {
	BodyFormat  string          `json:"body_format,omitempty"`
	BodyIndent  string          `json:"body_indent,omitempty"`
	BodyTrailer string          `json:"body_trailer,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

// encodeBody chooses the stored form of b: JSON when b can be rebuilt
// exactly from it, text when b is UTF-8, base64 otherwise.
func encodeBody(b []byte) bodyRecord {
	if len(b) == 0 {
		return bodyRecord{}
	}
	if !utf8.Valid(b) {
		return bodyRecord{BodyFormat: formatBase64, Body: marshalString(base64.StdEncoding.EncodeToString(b))}
	}
	if rec, ok := encodeJSONBody(b); ok {
		return rec
	}
	return bodyRecord{BodyFormat: formatText, Body: marshalString(string(b))}
}

// encodeJSONBody stores b as JSON if it is a JSON value whose layout
// (compact, or indented by a unit found in b, plus trailing white space)
// survives the trip through a cassette file byte for byte.
func encodeJSONBody(b []byte) (bodyRecord, bool) {
	value := bytes.TrimRight(b, " \t\r\n")
	if len(value) == 0 || strings.IndexByte(" \t\r\n", value[0]) >= 0 || !json.Valid(value) {
		return bodyRecord{}, false
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		return bodyRecord{}, false
	}
	rec := bodyRecord{BodyFormat: formatJSON, BodyTrailer: string(b[len(value):]), Body: compact.Bytes()}
	if !bytes.Equal(compact.Bytes(), value) {
		rec.BodyIndent = indentUnit(value)
		if rec.BodyIndent == "" {
			return bodyRecord{}, false
		}
	}
	// Check the whole trip: through the file encoder and back.
	data, err := marshalIndented(rec)
	if err != nil {
		return bodyRecord{}, false
	}
	var back bodyRecord
	if err := json.Unmarshal(data, &back); err != nil {
		return bodyRecord{}, false
	}
	got, err := back.decode()
	if err != nil || !bytes.Equal(got, b) {
		return bodyRecord{}, false
	}
	return rec, true
}

// indentUnit returns the white space that starts the second line of an
// indented JSON document, or "" if there is none.
func indentUnit(value []byte) string {
	i := bytes.IndexByte(value, '\n')
	if i < 0 {
		return ""
	}
	rest := value[i+1:]
	n := 0
	for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
		n++
	}
	return string(rest[:n])
}

// decode rebuilds the body bytes.
func (r bodyRecord) decode() ([]byte, error) {
	switch r.BodyFormat {
	case "":
		if len(r.Body) != 0 {
			return nil, errors.New("body without body_format")
		}
		return nil, nil
	case formatJSON:
		var out bytes.Buffer
		if err := json.Compact(&out, r.Body); err != nil {
			return nil, fmt.Errorf("json body: %w", err)
		}
		if r.BodyIndent != "" {
			var ind bytes.Buffer
			if err := json.Indent(&ind, out.Bytes(), "", r.BodyIndent); err != nil {
				return nil, fmt.Errorf("json body: %w", err)
			}
			out = ind
		}
		if strings.Trim(r.BodyTrailer, " \t\r\n") != "" {
			return nil, fmt.Errorf("body_trailer %q is not white space", r.BodyTrailer)
		}
		out.WriteString(r.BodyTrailer)
		return out.Bytes(), nil
	case formatText, formatBase64:
		var s string
		if err := json.Unmarshal(r.Body, &s); err != nil {
			return nil, fmt.Errorf("%s body is not a JSON string: %w", r.BodyFormat, err)
		}
		if r.BodyFormat == formatText {
			return []byte(s), nil
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("base64 body: %w", err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("unknown body_format %q", r.BodyFormat)
	}
}

// marshalString encodes s as a JSON string without HTML escaping.
func marshalString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// marshalIndented is the encoding of cassette files: two-space indent, no
// HTML escaping, a final newline.
func marshalIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newErrorRecord stores err (already scrubbed into msg) with its kind.
func newErrorRecord(err error, msg string) *errorRecord {
	return &errorRecord{Message: msg, Kind: errorKind(err)}
}

// errorKind classifies err for replay; "" when none of the kinds applies.
func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kindDeadline
	case errors.Is(err, context.Canceled):
		return kindCanceled
	case errors.Is(err, io.ErrUnexpectedEOF):
		return kindUnexpectedEOF
	case errors.Is(err, io.EOF):
		return kindEOF
	case errors.Is(err, syscall.ECONNRESET):
		return kindReset
	case errors.Is(err, syscall.ECONNREFUSED):
		return kindRefused
	case errors.As(err, &ne) && ne.Timeout():
		return kindTimeout
	}
	return ""
}

// fileRE matches cassette file names and captures the sequence number.
var fileRE = regexp.MustCompile(`^([0-9]+)-.*\.json$`)

// fileSeq returns the sequence number of a cassette file name.
func fileSeq(name string) (uint64, bool) {
	m := fileRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}

// fileName names the cassette file of exchange seq from the (scrubbed) host
// and path of its request.
func fileName(seq uint64, host, path string) string {
	slug := slugify(host + "/" + path)
	if slug == "" {
		slug = "request"
	}
	return fmt.Sprintf("%06d-%s.json", seq, slug)
}

// slugify keeps letters, digits, dots and underscores, turns runs of
// anything else into one dash, and caps the length.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range s {
		if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			b.WriteRune(c)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > 100 {
		out = strings.TrimRight(out[:100], "-")
	}
	return out
}

// writeAtomic writes data to dir/name through a temporary file in dir and
// a rename, so a reader never sees a partial file. The file is 0600.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
