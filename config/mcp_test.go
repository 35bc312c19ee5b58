package config

import (
	"testing"

	"github.com/arbiterhq/arbiter/tool/mcptool"
)

// The timeout check compares a call's timeout with the wait the MCP
// client will apply: the default is the client's.
func TestAskTimeoutDefaultIsTheClients(t *testing.T) {
	if defaultAskTimeout != mcptool.DefaultAskTimeout {
		t.Errorf("config's default ask_timeout %v differs from the client's %v", defaultAskTimeout, mcptool.DefaultAskTimeout)
	}
}
