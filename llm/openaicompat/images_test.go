package openaicompat

import (
	"bytes"
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// photoMessages is a user message with its text and one picture.
func photoMessages() []llm.Message {
	return []llm.Message{{Role: llm.RoleUser, Content: "image receipt.jpg", Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte("\xff\xd8\xffjpeg")}}}}
}

func TestImagesSentAsDataURLParts(t *testing.T) {
	srv, p := newTest(t, Config{Images: true})
	srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
	if _, err := p.Complete(context.Background(), llm.Request{Messages: photoMessages()}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	m := srv.Requests()[0].Messages[0]
	if m.Content != "image receipt.jpg" || len(m.Images) != 1 {
		t.Fatalf("message on the wire = %+v, want its text and one image part", m)
	}
	if img := m.Images[0]; img.MediaType != "image/jpeg" || !bytes.Equal(img.Data, []byte("\xff\xd8\xffjpeg")) {
		t.Errorf("image part = %s %q, want the photo's bytes as image/jpeg", img.MediaType, img.Data)
	}
	if !bytes.Contains(srv.Requests()[0].Body, []byte(`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/anBlZw=="}}`)) {
		t.Errorf("body has no data URL part: %s", srv.Requests()[0].Body)
	}
}

func TestImagesLeftOutForATextModel(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
	if _, err := p.Complete(context.Background(), llm.Request{Messages: photoMessages()}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if m := srv.Requests()[0].Messages[0]; m.Content != "image receipt.jpg"+llm.ImagesLeftOut || len(m.Images) != 0 {
		t.Errorf("message on the wire = %+v, want the text alone", m)
	}
}

func TestImageOfUnknownTypeNotSent(t *testing.T) {
	srv, p := newTest(t, Config{Images: true})
	msgs := photoMessages()
	msgs[0].Images[0].MediaType = "image/tiff"
	_, err := p.Complete(context.Background(), llm.Request{Messages: msgs})
	if e := asLLMError(t, err, p); e.Kind != llm.ErrBadRequest || srv.Count() != 0 {
		t.Errorf("err = %v after %d calls, want a bad request and no call", err, srv.Count())
	}
}
