package cassette

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestBodyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, body, format, indent string
	}{
		{"empty", "", "", ""},
		{"compact object", `{"a":1,"b":[true,null,"x"]}`, "json", ""},
		{"compact with newline", "{\"a\":1}\n", "json", ""},
		{"two-space indent", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {}\n}\n", "json", "  "},
		{"tab indent", "{\n\t\"a\": 1\n}", "json", "\t"},
		{"html and escapes kept", `{"t":"<b> & \u003c \u2028 é \"q\""}`, "json", ""},
		{"raw line separator", "{\"t\":\"a\u2028b\"}", "json", ""},
		{"json string", `"hello"`, "json", ""},
		{"json number", `42`, "json", ""},
		{"irregular layout", `{"a": 1, "b":2}`, "text", ""},
		{"leading space", ` {"a":1}`, "text", ""},
		{"not json", "data: {\"x\":1}\n\ndata: [DONE]\n\n", "text", ""},
		{"text that looks like a string", `hello "world"`, "text", ""},
		{"binary", "\xff\x00\xfe", "base64", ""},
		{"invalid utf8 in json", "{\"a\":\"\xff\"}", "base64", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := encodeBody([]byte(tc.body))
			if rec.BodyFormat != tc.format || rec.BodyIndent != tc.indent {
				t.Errorf("format %q indent %q, want %q %q", rec.BodyFormat, rec.BodyIndent, tc.format, tc.indent)
			}
			// Through a whole file, nested, and back.
			data, err := marshalIndented(exchangeFile{Response: &responseRecord{bodyRecord: rec}})
			if err != nil {
				t.Fatal(err)
			}
			var back exchangeFile
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			got, err := back.Response.decode()
			if err != nil || string(got) != tc.body {
				t.Errorf("decoded %q, %v; want %q\nfile:\n%s", got, err, tc.body, data)
			}
		})
	}
}

func TestHeaderRecord(t *testing.T) {
	h := http.Header{"Content-Type": {"a/b"}, "Vary": {"x", "y"}, "X-Html": {"<&>"}}
	data, err := marshalIndented(struct{ H headerRecord }{headerRecord(h)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"H\": {\n    \"Content-Type\": \"a/b\",\n    \"Vary\": [\n      \"x\",\n      \"y\"\n    ],\n    \"X-Html\": \"<&>\"\n  }\n}\n"; string(data) != want {
		t.Errorf("marshal: %s, want %s", data, want)
	}
	var back headerRecord
	if err := json.Unmarshal([]byte(`{"content-type":"a/b","Vary":["x","y"],"X-Html":"<&>"}`), &back); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(http.Header(back)) != fmt.Sprint(h) {
		t.Errorf("unmarshal: %v, want %v", back, h)
	}
	if err := json.Unmarshal([]byte(`{"A":1}`), &back); err == nil || !strings.Contains(err.Error(), "header A") {
		t.Errorf("bad header value: %v", err)
	}
}

func TestSensitiveNames(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "X-Api-Key": true, "Api-Key": true,
		"Cookie": true, "Set-Cookie": true, "X-Goog-Api-Key": true, "X-Session-Token": true,
		"X-Client-Secret": true, "Idempotency-Key": true, "x-ratelimit-remaining-tokens": true,
		"Content-Type": false, "Retry-After": false, "User-Agent": false, "Openai-Organization": false,
	} {
		if got := sensitiveHeader(name); got != want {
			t.Errorf("sensitiveHeader(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"key": true, "API_KEY": true, "apikey": true, "token": true, "limit": false, "keys": false} {
		if got := sensitiveParam(name); got != want {
			t.Errorf("sensitiveParam(%q) = %v", name, got)
		}
	}
}

func TestScrubRequest(t *testing.T) {
	const bearer = "sk-live-abcdef123456"
	given := "given/secret+1" // has characters that percent- and JSON-encode
	s := newScrubber([]string{given, ""})
	u, _ := url.Parse("https://user:hunter2hunter2@api.example.test/v1/" + url.PathEscape(given) +
		"/x?token=querytoken99&model=m&api%5Fkey=" + url.QueryEscape(given) + "&q=" + url.QueryEscape(bearer))
	req := &http.Request{Method: "POST", URL: u, Header: http.Header{
		"Authorization": {"Bearer " + bearer},
		"X-Note":        {"uses " + bearer},
		"Cookie":        {"a=shortv; sess=cookie-session-value"},
	}}
	rep := s.forRequest(req)

	gotURL := rep.url(req.URL)
	for _, secret := range []string{bearer, given, url.PathEscape(given), url.QueryEscape(given), "hunter2hunter2", "querytoken99"} {
		if strings.Contains(gotURL, secret) {
			t.Errorf("url %s contains %q", gotURL, secret)
		}
	}
	if !strings.Contains(gotURL, "token=[scrubbed]&model=m&api%5Fkey=[scrubbed]&q=[scrubbed]") {
		t.Errorf("url %s", gotURL)
	}
	h := rep.header(req.Header)
	if h.Get("Authorization") != scrubbed || h.Get("Cookie") != scrubbed || h.Get("X-Note") != "uses [scrubbed]" {
		t.Errorf("headers %v", h)
	}
	if req.Header.Get("Authorization") != "Bearer "+bearer {
		t.Error("scrubbing changed the request's own headers")
	}
	jsonGiven, _ := json.Marshal(given)
	body := `{"a":"` + bearer + `","b":` + string(jsonGiven) + `,"c":"cookie-session-value","d":"hunter2hunter2","e":"shortv"}`
	want := `{"a":"[scrubbed]","b":"[scrubbed]","c":"[scrubbed]","d":"[scrubbed]","e":"shortv"}`
	if got := string(rep.bytes([]byte(body))); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}

	// Without credentials in the request only the given secrets apply.
	plain := s.forRequest(&http.Request{URL: &url.URL{Scheme: "http", Host: "h", Path: "/p"}})
	if plain != s.base {
		t.Error("a request without credentials built its own replacer")
	}
	if got := plain.str("x " + given + " " + bearer); got != "x [scrubbed] "+bearer {
		t.Errorf("given only: %s", got)
	}
}

func TestFileName(t *testing.T) {
	for _, tc := range []struct {
		seq        uint64
		host, path string
		want       string
	}{
		{1, "api.openai.com", "/v1/chat/completions", "000001-api.openai.com-v1-chat-completions.json"},
		{42, "127.0.0.1:8080", "/", "000042-127.0.0.1-8080.json"},
		{7, "", "", "000007-request.json"},
		{1234567, "h", "/a//b?c", "1234567-h-a-b-c.json"},
		{3, "h", "/" + strings.Repeat("x", 300), "000003-h-" + strings.Repeat("x", 98) + ".json"},
	} {
		if got := fileName(tc.seq, tc.host, tc.path); got != tc.want {
			t.Errorf("fileName(%d, %q, %q) = %q, want %q", tc.seq, tc.host, tc.path, got, tc.want)
		}
		if n, ok := fileSeq(tc.want); !ok || n != tc.seq {
			t.Errorf("fileSeq(%q) = %d, %v", tc.want, n, ok)
		}
	}
	for _, name := range []string{"cassette.json", ".000001-x.json.tmp-1", "000001-x.txt", "x-000001.json"} {
		if _, ok := fileSeq(name); ok {
			t.Errorf("fileSeq accepted %q", name)
		}
	}
}
