package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/media/mediatest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// evidenceFile is an evidence item of an HTTP message carrying a file.
func evidenceFile(name, mediaType string, data []byte) string {
	return fmt.Sprintf(`{"kind":"attachment","text":%q,"source":%q,"media_type":%q,"data":%q}`, name, name, mediaType, base64.StdEncoding.EncodeToString(data))
}

// lastUserImages are the images of the last model request's messages.
func lastUserImages(t *testing.T, model *llmtest.Server) []llmtest.ChatImage {
	t.Helper()
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	var out []llmtest.ChatImage
	for _, m := range reqs[len(reqs)-1].Messages {
		out = append(out, m.Images...)
	}
	return out
}

func promptOf(model *llmtest.Server) string {
	reqs := model.Requests()
	var b strings.Builder
	for _, m := range reqs[len(reqs)-1].Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

func TestHTTPPDFBecomesTaskAfterConfirmation(t *testing.T) {
	e := newE2E(t)
	e.Decide("create_task", `{"title":"Оплатить счёт 42","assignee":"Дмитрий","dueIso":"2026-12-04","column":null,"description":null}`)
	pdf := mediatest.PDF("Invoice 42", "Pay by 2026-12-04")
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m1","text":"Сделай задачу по счёту","evidence":[`+evidenceFile("invoice.pdf", "application/pdf", pdf)+`]}`)
	if status != 200 || body["pending"] == nil {
		t.Fatalf("status %d %v, want a confirmation", status, body)
	}
	prompt := promptOf(e.Model)
	if !strings.Contains(prompt, "text extracted from the PDF invoice.pdf:\nInvoice 42\nPay by 2026-12-04") || !strings.Contains(prompt, `kind="attachment"`) {
		t.Errorf("the PDF's text is not in the prompt as labelled evidence:\n%s", prompt)
	}
	if !strings.Contains(body["say"].(string), "«invoice.pdf»") {
		t.Errorf("the confirmation does not name the attachment: %q", body["say"])
	}
	if cards, _ := e.TestBoard().Cards(context.Background(), "acme"); len(cards) != 0 {
		t.Fatalf("a card exists before confirmation: %+v", cards)
	}
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m2","button":"`+confirmButton(t, body)+`"}`)
	if cards, _ := e.TestBoard().Cards(context.Background(), "acme"); status != 200 || len(cards) != 1 || cards[0].Title != "Оплатить счёт 42" {
		t.Fatalf("after confirming: %d %v, cards %+v", status, body, cards)
	}
}

func TestHTTPImageShownToTheModel(t *testing.T) {
	e := newE2E(t)
	e.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Красный квадрат.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	png := mediatest.PNG()
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"Что на картинке?","evidence":[`+evidenceFile("shot.png", "image/png", png)+`]}`)
	if status != 200 || body["say"] != "Красный квадрат." {
		t.Fatalf("status %d %v", status, body)
	}
	imgs := lastUserImages(t, e.Model)
	if len(imgs) != 1 || imgs[0].MediaType != "image/png" || !bytes.Equal(imgs[0].Data, png) {
		t.Fatalf("images on the wire = %+v, want the PNG", imgs)
	}
	if !strings.Contains(promptOf(e.Model), "image shot.png") {
		t.Errorf("the image's evidence is not labelled:\n%s", promptOf(e.Model))
	}
}

func TestHTTPUnreadableFileLosesNothingElse(t *testing.T) {
	e := newE2E(t)
	e.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Файл не читается.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"Посмотри файлы","evidence":[`+
		evidenceFile("broken.pdf", "application/pdf", []byte("%PDF-1.4 garbage"))+`,`+evidenceFile("notes.png", "image/png", []byte("not a picture"))+
		`,{"kind":"forward","text":"Ольга: созвон в 15:00"}]}`)
	if status != 200 {
		t.Fatalf("status %d %v", status, body)
	}
	prompt := promptOf(e.Model)
	for _, want := range []string{"broken.pdf\nthe PDF could not be read:", "notes.png\nthe image could not be read:", "Ольга: созвон в 15:00", "Посмотри файлы"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if n := len(lastUserImages(t, e.Model)); n != 0 {
		t.Errorf("%d images sent for a file that is not one", n)
	}

	// Bad file data is refused with the reason, before any model call.
	calls := e.Model.Count()
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","text":"x","evidence":[{"kind":"forward","text":"y","data":"aGk="}]}`)
	if status != 400 || !strings.Contains(fmt.Sprint(body), "data must be the non-empty base64 content of an attachment") || e.Model.Count() != calls {
		t.Errorf("data on a forward: %d %v", status, body)
	}
	status, _ = e.Post("k-dmitry", `{"conversation_id":"c1","text":"x","evidence":[{"kind":"attachment","text":"y","data":"%%%"}]}`)
	if status != 400 {
		t.Errorf("invalid base64: status %d, want 400", status)
	}
}

func TestHTTPFileOverTheBodyLimits(t *testing.T) {
	e := newE2E(t)
	// Text beyond max_body_bytes is refused even when files may be larger.
	long := strings.Repeat("я", 40<<10)
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"`+long+`","evidence":[`+evidenceFile("a.png", "image/png", mediatest.PNG())+`]}`)
	if status != 413 {
		t.Errorf("a long text beside a file: %d %v, want 413", status, body)
	}
	// A picture within max_file_bytes but over the image limit is named as such.
	e.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"ok","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	big := append(mediatest.PNG(), make([]byte, 11<<20)...)
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","text":"посмотри","evidence":[`+evidenceFile("big.png", "image/png", big)+`]}`)
	if status != 200 || !strings.Contains(promptOf(e.Model), "big.png\nthe image could not be read: the file is over the size limit") {
		t.Errorf("oversized image: %d %v\n%s", status, body, promptOf(e.Model))
	}
}

func TestTelegramPhotoAndPDFRead(t *testing.T) {
	tg := servertest.NewTelegram(t, server.Builtin(), "")
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`
	png, pdf := mediatest.PNG(), mediatest.PDF("Act of acceptance 7", "Signed by both parties")
	tg.Bot.AddFile("PHOTO-big", png)
	tg.Bot.AddFile("DOC-act", pdf)

	tg.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"На фото красный квадрат.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	tg.Update(300, `"message":{"message_id":20,`+from+`,"caption":"что тут?","photo":[{"file_id":"PHOTO-small","file_unique_id":"u1","width":1,"height":1},{"file_id":"PHOTO-big","file_unique_id":"u2","width":2,"height":2,"file_size":`+fmt.Sprint(len(png))+`}]}`)
	tg.WaitSent(1)
	imgs := lastUserImages(t, tg.Model)
	if len(imgs) != 1 || imgs[0].MediaType != "image/png" || !bytes.Equal(imgs[0].Data, png) {
		t.Fatalf("images on the wire = %+v, want the largest photo size's bytes", imgs)
	}
	if !strings.Contains(promptOf(tg.Model), "image photo 2x2") {
		t.Errorf("photo evidence not labelled:\n%s", promptOf(tg.Model))
	}

	tg.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Это акт приёмки 7.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	tg.Update(301, `"message":{"message_id":21,`+from+`,"caption":"что за документ?","document":{"file_id":"DOC-act","file_unique_id":"u3","file_name":"act.pdf","mime_type":"application/pdf","file_size":`+fmt.Sprint(len(pdf))+`}}`)
	tg.WaitSent(2)
	if p := promptOf(tg.Model); !strings.Contains(p, `text extracted from the PDF document "act.pdf"`) || !strings.Contains(p, "Act of acceptance 7\nSigned by both parties") {
		t.Errorf("the PDF's text is not in the prompt:\n%s", p)
	}
	downloads := 0
	for _, c := range tg.Bot.Calls() {
		if c.Method == "file" {
			downloads++
		}
	}
	if downloads != 2 {
		t.Errorf("%d file downloads, want the photo and the PDF", downloads)
	}
}

func TestImagesOffForATextModel(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-test"})
	t.Cleanup(model.Close)
	e := serveE2E(t, model, strings.Replace(e2eConfig, "api_key_env: PRIMARY_KEY}", "api_key_env: PRIMARY_KEY, images: false}", 1))
	e.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Не вижу картинку.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"Что на картинке?","evidence":[`+evidenceFile("shot.png", "image/png", mediatest.PNG())+`]}`)
	if status != 200 {
		t.Fatalf("status %d %v", status, body)
	}
	if n := len(lastUserImages(t, e.Model)); n != 0 {
		t.Errorf("%d images sent to a model configured without images", n)
	}
	if p := promptOf(e.Model); !strings.Contains(p, "image shot.png") || !strings.Contains(p, "this model does not take images") {
		t.Errorf("the picture is not described in its place:\n%s", p)
	}
}
