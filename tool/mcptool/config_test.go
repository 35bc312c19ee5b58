package mcptool_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/tool/mcptool"
)

// The configuration's timeout check compares a call's timeout with the
// wait this client will apply: its default is the client's.
func TestConfigAskTimeoutDefaultIsTheClients(t *testing.T) {
	if config.DefaultAskTimeout != mcptool.DefaultAskTimeout {
		t.Errorf("config's default ask_timeout %v differs from the client's %v", config.DefaultAskTimeout, mcptool.DefaultAskTimeout)
	}
}
