package httpapi

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestFileBytesBeyondTheBodyLimit: a file's data in evidence may take a
// message past max_body_bytes (up to the file limit, by default
// DefaultMaxFileBytes); everything else in it is held to max_body_bytes,
// to the byte.
func TestFileBytesBeyondTheBodyLimit(t *testing.T) {
	h := &recorder{}
	srv := newTestServer(t, h) // max_body_bytes 4096, the default file limit
	file := strings.Repeat("%PDF-1.4 ", 700)[:6000]
	withFile := `{"conversation_id":"c1","message_id":"m1","text":"make a task of this","evidence":[{"kind":"attachment","text":"a.pdf","media_type":"application/pdf","data":"` +
		base64.StdEncoding.EncodeToString([]byte(file)) + `"}]}`
	if status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", withFile); status != 200 {
		t.Fatalf("a %d-byte message whose file is 8000 of them: %d %v", len(withFile), status, body)
	}
	if len(h.got) != 1 || len(h.got[0].Evidence) != 1 || string(h.got[0].Evidence[0].Data) != file {
		t.Fatalf("the file did not reach the turn whole: %+v", h.got)
	}

	envelope := `{"conversation_id":"c1","message_id":"m2","text":""}`
	exactly := envelope[:len(envelope)-2] + strings.Repeat("x", 4096-len(envelope)) + `"}`
	if status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", exactly); status != 200 {
		t.Errorf("a message of exactly max_body_bytes (%d): %d %v", len(exactly), status, body)
	}
	over := strings.Replace(exactly, `"m2"`, `"m3"`, 1)
	over = over[:len(over)-2] + `x"}`
	if status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", over); status != 413 {
		t.Errorf("a message a byte over max_body_bytes (%d): %d %v", len(over), status, body)
	}
}
