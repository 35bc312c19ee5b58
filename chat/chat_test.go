package chat

import "testing"

// Keys that differ only in where a "/" or "%" sits render differently, and
// AppendTo writes exactly what String returns.
func TestConversationKeyRendering(t *testing.T) {
	keys := []ConversationKey{
		{Tenant: "t", Chat: "c", User: "u"},
		{Tenant: "t/c", Chat: "u", User: ""},
		{Tenant: "t", Chat: "c/u", User: ""},
		{Tenant: "t%2Fc", Chat: "u", User: ""},
		{Tenant: "", Chat: "", User: ""},
		{Tenant: "ацме", Chat: "-100%", User: "42/7"},
	}
	seen := map[string]ConversationKey{}
	for _, k := range keys {
		s := k.String()
		if got := string(k.AppendTo([]byte("x"))); got != "x"+s {
			t.Errorf("AppendTo(%+v) = %q, want %q", k, got, "x"+s)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("%+v and %+v both render as %q", k, other, s)
		}
		seen[s] = k
	}
	if got := (ConversationKey{Tenant: "a/b", Chat: "100%", User: "u"}).String(); got != "a%2Fb/100%25/u" {
		t.Errorf("String = %q", got)
	}
}
