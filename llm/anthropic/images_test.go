package anthropic

import (
	"bytes"
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// photoMessages is a user message with its text and one picture.
func photoMessages() []llm.Message {
	return []llm.Message{{Role: llm.RoleUser, Content: "image receipt.png", Images: []llm.Image{{MediaType: "image/png", Data: []byte("\x89PNGdata")}}}}
}

func TestImagesSentAsBase64Blocks(t *testing.T) {
	srv, p := newTest(t, Config{Images: true})
	srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
	if _, err := p.Complete(context.Background(), llm.Request{Messages: photoMessages()}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	m := srv.Requests()[0].Messages[0]
	imgs := m.Images()
	if m.Text() != "image receipt.png" || len(imgs) != 1 {
		t.Fatalf("message on the wire = %+v, want its text and one image block", m)
	}
	if imgs[0].Type != "base64" || imgs[0].MediaType != "image/png" || !bytes.Equal(imgs[0].Data, []byte("\x89PNGdata")) {
		t.Errorf("image source = %+v, want the picture's bytes in base64 as image/png", imgs[0])
	}
	if m.Content[0].Type != "text" || m.Content[1].Type != "image" {
		t.Errorf("blocks = %+v, want the text, then the image", m.Content)
	}
}

func TestImagesLeftOutForATextModel(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
	if _, err := p.Complete(context.Background(), llm.Request{Messages: photoMessages()}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if m := srv.Requests()[0].Messages[0]; m.Text() != "image receipt.png"+llm.ImagesLeftOut || len(m.Images()) != 0 {
		t.Errorf("message on the wire = %+v, want the text alone", m)
	}
}
