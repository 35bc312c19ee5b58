package turn

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// attachmentSlot keeps, in the conversation's state, the last file the
// user sent: what a later "attach it to the card" refers to.
const attachmentSlot = "attachment"

// attachmentRef is the placeholder the model writes; the server replaces
// it with the stored attachment.
const attachmentRef = "last"

var errNoAttachment = errors.New("no file was sent in this conversation")

// rememberAttachment stores the last attachment evidence of the turn that
// carries a file reference.
func (e *Engine) rememberAttachment(s *state) {
	for i := len(s.in.Evidence) - 1; i >= 0; i-- {
		ev := s.in.Evidence[i]
		if ev.Kind != chat.EvidenceAttachment || ev.Source == "" {
			continue
		}
		setSlot(s, attachmentSlot, attachmentOf(ev))
		return
	}
}

// attachmentOf is the file reference of attachment evidence: a link or a
// channel's file, named by the first line of its description.
func attachmentOf(ev chat.Evidence) tool.Attachment {
	a := tool.Attachment{Name: Clip(attachmentName(ev.Text), 200)}
	if strings.HasPrefix(ev.Source, "https://") || strings.HasPrefix(ev.Source, "http://") {
		a.URL = ev.Source
	} else {
		a.File = ev.Source
	}
	return a
}

// fillAttachment replaces the model's "last" in the tool's attachment
// argument with the stored attachment. Any other value there is refused:
// a file reference never comes from model text.
func fillAttachment(s *state, spec tool.Spec, args []byte) ([]byte, error) {
	if spec.AttachmentArg == "" {
		return args, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, err
	}
	v, ok := m[spec.AttachmentArg]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return args, nil
	}
	var ref string
	if json.Unmarshal(v, &ref) != nil || ref != attachmentRef {
		return nil, errors.New("the attachment can only be the file the user sent (\"last\")")
	}
	stored, ok := s.conv.Slots[attachmentSlot]
	if !ok {
		return nil, errNoAttachment
	}
	m[spec.AttachmentArg] = stored
	return gate.Canonical(mustJSON(m), nil)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
