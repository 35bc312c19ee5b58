package chat

import "testing"

func TestLanguage(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "en"},
		{[]string{""}, "en"},
		{[]string{"", ""}, "en"},
		{[]string{"", "ru"}, "ru"},   // the tenant's when the user has none
		{[]string{"en", "ru"}, "en"}, // the user's first
		{[]string{"ru-RU"}, "ru"},    // a client's locale
		{[]string{"EN_gb", "ru"}, "en"},
		{[]string{"de", "ru"}, "ru"}, // no texts in German: the next candidate
		{[]string{"de"}, "en"},
	} {
		if got := Language(tc.in...); got != tc.want {
			t.Errorf("Language(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
