package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"unicode"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/server"
)

func hasCyrillic(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Cyrillic, r) {
			return true
		}
	}
	return false
}

// The English local setup speaks English only: tool titles, the board's
// columns, the server's replies and its confirmation buttons.
func TestEnglishLocalSetupShowsNoRussian(t *testing.T) {
	cfg := server.LocalConfig(func(string) string { return "" })
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	s, err := server.Build(cfg, server.Builtin(), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ten, user := cfg.Tenants[0], cfg.Tenants[0].Users[0]
	id := server.Identity(ten, user, []string{"read", "write:safe", "write:full"})
	if id.Language != "en" {
		t.Fatalf("local user's language %q", id.Language)
	}
	for _, spec := range s.Engine.Catalog(id) {
		if title := spec.TitleIn(id.Language); hasCyrillic(title) {
			t.Errorf("tool %s titled %q", spec.Name, title)
		}
	}
	cols, err := s.TestBoard().Columns(context.Background(), server.LocalTenant)
	if err != nil || len(cols) == 0 {
		t.Fatalf("columns %v, %v", cols, err)
	}
	for _, c := range cols {
		if hasCyrillic(c) {
			t.Errorf("column %q", c)
		}
	}
	for _, in := range []chat.Inbound{
		{Text: "/help"}, {Text: "/tasks"}, {Text: "yes"},
		{Call: &chat.Call{Tool: "create_task", Args: []byte(`{"title":"Check the form","column":null,"assignee":null,"dueIso":null,"description":null}`)}},
	} {
		in.Identity, in.Chat = id, "c1"
		out, err := s.Engine.HandleTurn(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if hasCyrillic(out.Say) {
			t.Errorf("%q answered %q", in.Text, out.Say)
		}
		for _, b := range out.Buttons {
			if hasCyrillic(b.Label) {
				t.Errorf("button %q", b.Label)
			}
		}
	}
}

// ARBITER_LANGUAGE is read by the one rule of languages (chat.Language):
// a region is dropped, anything else is the default.
func TestLocalSetupLanguage(t *testing.T) {
	for set, want := range map[string]string{"": "en", "ru": "ru", "ru-RU": "ru", "EN_us": "en", "de": "en"} {
		cfg := server.LocalConfig(func(name string) string { return map[string]string{"ARBITER_LANGUAGE": set}[name] })
		if got := cfg.Tenants[0].Language; got != want {
			t.Errorf("ARBITER_LANGUAGE=%q: language %q, want %q", set, got, want)
		}
		if cols := cfg.Tools.Taskboard.Columns; len(cols) != 3 {
			t.Errorf("ARBITER_LANGUAGE=%q: columns %v", set, cols)
		}
	}
}
