package jsonstr

import (
	"encoding/json"
	"testing"
)

// sameValue fails unless got, a JSON string, decodes to the value that
// encoding/json's encoding of s decodes to: s with invalid UTF-8 replaced
// by U+FFFD. (The bytes may differ: Append leaves <, > and & as they are.)
func sameValue(t testing.TB, s, got string) {
	t.Helper()
	std, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("encode %q: %v", s, err)
	}
	var want, back string
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatalf("decode %s: %v", std, err)
	}
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Errorf("output %s for %q does not decode: %v", got, s, err)
		return
	}
	if back != want {
		t.Errorf("output %s for %q decodes to %q, want %q", got, s, back, want)
	}
}

func TestAppend(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", `""`},
		{"plain", "hello, world", `"hello, world"`},
		{"quote and backslash", `say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"newline, return, tab", "a\nb\rc\td", `"a\nb\rc\td"`},
		{"other controls", "\x00\x01\x08\x0c\x1f", `"\u0000\u0001\b\f\u001f"`},
		{"DEL passes", "a\x7fb", "\"a\x7fb\""},
		{"HTML left alone", "<a href='x'>&</a>", `"<a href='x'>&</a>"`},
		{"multibyte", "café – 日本 🙂", `"café – 日本 🙂"`},
		{"line and paragraph separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"invalid byte", "a\xffb", `"a\ufffdb"`},
		{"truncated sequence", "a\xe2\x82", `"a\ufffd\ufffd"`},
		{"lone continuation byte", "\x80", `"\ufffd"`},
		{"escape at the end", "end\n", `"end\n"`},
		{"escape at the start", "\"start", `"\"start"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Append(nil, tt.in))
			if got != tt.want {
				t.Errorf("Append(%q) = %s, want %s", tt.in, got, tt.want)
			}
			sameValue(t, tt.in, got)
		})
	}
}

func TestAppendAppends(t *testing.T) {
	prefix := []byte(`{"k":`)
	b := make([]byte, len(prefix), 64)
	copy(b, prefix)
	got := Append(b, "v\n")
	if string(got) != `{"k":"v\n"` {
		t.Errorf("got %s", got)
	}
	if &got[0] != &b[0] {
		t.Errorf("did not append in place with room to spare")
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\x00", "<&>", "\u2028", "\xff\xfe", "日本\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameValue(t, s, string(Append(nil, s)))
	})
}

// AppendMarshaled writes what json.Marshal writes, byte for byte.
func FuzzAppendMarshaled(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\b\f\x00\x1f", "<a href='x'>&amp;</a>", "\u2028\u2029", "\xff\xfe", "日本\xe2\x82", "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendMarshaled([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendMarshaled(%q) = %s, json.Marshal writes %s", s, got[1:], want)
		}
	})
}
