package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
)

// LocalTenant is the tenant of the local setup.
const LocalTenant = "local"

// LocalConfig is the zero-configuration setup: one tenant, one user, every
// tool, the task board, and a key created on first start in the store's
// directory. ARBITER_LISTEN, ARBITER_LANGUAGE (en, ru), ARBITER_TIMEZONE
// and ARBITER_USER_NAME adjust it.
func LocalConfig(getenv func(string) string) *config.Config {
	lang := chat.Language(getenv("ARBITER_LANGUAGE"))
	zone := getenv("ARBITER_TIMEZONE")
	if _, err := time.LoadLocation(zone); err != nil || zone == "" {
		zone = "UTC"
	}
	name := orDefault(getenv("ARBITER_USER_NAME"), "Local User")
	return &config.Config{
		Listen: orDefault(getenv("ARBITER_LISTEN"), "127.0.0.1:8080"),
		Store:  config.Store{Kind: "sqlite", Path: filepath.Join("data", "arbiter.db")},
		Tenants: []config.Tenant{{
			ID: LocalTenant, Timezone: zone, Language: lang,
			Roles: map[string]config.Role{"owner": {Tools: []string{"*"}}},
			Users: []config.User{{ID: "local", Name: name, Role: "owner"}},
		}},
		Tools: config.Tools{Taskboard: &config.Taskboard{Columns: localColumns[lang]}},
	}
}

// localColumns are the local board's columns in its language.
var localColumns = map[string][]string{
	"en": {"Inbox", "In progress", "Done"},
	"ru": {"Входящие", "В работе", "Готово"},
}

// localKey reads the local setup's API key, creating it on first start.
func localKey(dir string) (string, error) {
	path := filepath.Join(dir, "local-api-key")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	key := "ak_local_" + hex.EncodeToString(raw[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write local API key: %w", err)
	}
	return key, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func joinSorted(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
