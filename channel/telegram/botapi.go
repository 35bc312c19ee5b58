package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxAPIResponse bounds a Bot API response body (a getUpdates batch of 100
// updates fits with room to spare).
const maxAPIResponse = 32 << 20

// callTimeout bounds one Bot API call other than getUpdates.
const callTimeout = 20 * time.Second

// botAPI is a minimal Bot API client: POST JSON to /bot<token>/<method>,
// read {"ok":..., "result":...}. Safe for concurrent use.
type botAPI struct {
	base  string
	token string
	hc    *http.Client
}

// apiError is a Bot API answer with ok=false (or a non-JSON answer).
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// transportError is a failed request. It never holds the request URL,
// which contains the token.
type transportError struct {
	Method string
	Err    error
}

func (e *transportError) Error() string { return "telegram " + e.Method + ": " + e.Err.Error() }
func (e *transportError) Unwrap() error { return e.Err }

// transient reports whether err is worth retrying (network trouble, 5xx,
// 429) and how long Telegram asked to wait.
func transient(err error) (bool, time.Duration) {
	if err == nil || errors.Is(err, context.Canceled) {
		return false, 0
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code == http.StatusTooManyRequests || ae.Code >= 500, ae.RetryAfter
	}
	var te *transportError
	return errors.As(err, &te), 0
}

type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call invokes method with params (JSON) and decodes the result into out
// (if not nil). Calls without a deadline get callTimeout.
func (b *botAPI) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode: %w", method, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/bot"+b.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return &transportError{Method: method, Err: errors.New("bad API base URL")}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return &transportError{Method: method, Err: stripURL(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse))
	if err != nil {
		return &transportError{Method: method, Err: stripURL(err)}
	}
	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return &apiError{Method: method, Code: resp.StatusCode, Description: "answer is not Bot API JSON"}
	}
	if !r.OK {
		e := &apiError{Method: method, Code: r.ErrorCode, Description: r.Description}
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if r.Parameters != nil && r.Parameters.RetryAfter > 0 {
			e.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return &apiError{Method: method, Code: resp.StatusCode, Description: "unexpected result: " + err.Error()}
		}
	}
	return nil
}

// stripURL drops the *url.Error wrapper, whose message holds the URL and
// so the token.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// errTooLarge: a download exceeded its cap.
var errTooLarge = errors.New("file larger than the limit")

// download fetches a file by its file id: getFile, then the file URL
// /file/bot<token>/<file_path>. More than limit bytes is errTooLarge.
func (b *botAPI) download(ctx context.Context, fileID string, limit int64) ([]byte, error) {
	var f struct {
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	if err := b.call(ctx, "getFile", map[string]string{"file_id": fileID}, &f); err != nil {
		return nil, err
	}
	if f.FilePath == "" {
		return nil, &apiError{Method: "getFile", Code: http.StatusNotFound, Description: "no file_path"}
	}
	if f.FileSize > limit {
		return nil, errTooLarge
	}
	segs := strings.Split(f.FilePath, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/file/bot"+b.token+"/"+strings.Join(segs, "/"), nil)
	if err != nil {
		return nil, &transportError{Method: "file", Err: errors.New("bad file URL")}
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, &transportError{Method: "file", Err: stripURL(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &apiError{Method: "file", Code: resp.StatusCode, Description: "download failed"}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &transportError{Method: "file", Err: stripURL(err)}
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// Outgoing Bot API shapes.

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type replyParameters struct {
	MessageID                int64 `json:"message_id"`
	AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
}

type sendMessageParams struct {
	ChatID          int64            `json:"chat_id"`
	MessageThreadID int64            `json:"message_thread_id,omitempty"`
	Text            string           `json:"text"`
	ParseMode       string           `json:"parse_mode,omitempty"`
	ReplyParameters *replyParameters `json:"reply_parameters,omitempty"`
	ReplyMarkup     *inlineKeyboard  `json:"reply_markup,omitempty"`
	LinkPreview     linkPreview      `json:"link_preview_options"`
}

// linkPreview is the Bot API's LinkPreviewOptions. Previews stay off: to
// draw one, Telegram's servers fetch the first link of the text as soon as
// the message is sent, so a link a reply carries — one an injected text
// made the model write, with the user's data in it — would reach its host
// without anybody clicking it.
type linkPreview struct {
	IsDisabled bool `json:"is_disabled"`
}

var noPreview = linkPreview{IsDisabled: true}

func (b *botAPI) sendMessage(ctx context.Context, p sendMessageParams) (messageID int64, err error) {
	p.LinkPreview = noPreview
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	if err := b.call(ctx, "sendMessage", p, &m); err != nil {
		return 0, err
	}
	return m.MessageID, nil
}

func (b *botAPI) sendTyping(ctx context.Context, chatID, threadID int64) error {
	p := map[string]any{"chat_id": chatID, "action": "typing"}
	if threadID != 0 {
		p["message_thread_id"] = threadID
	}
	return b.call(ctx, "sendChatAction", p, nil)
}

func (b *botAPI) answerCallback(ctx context.Context, id, text string) error {
	p := map[string]any{"callback_query_id": id}
	if text != "" {
		p["text"] = text
	}
	return b.call(ctx, "answerCallbackQuery", p, nil)
}

// editMessageText replaces the text of a message the bot sent (plain
// text, no keyboard).
// sendMessageDraft streams a partial message to a private chat: drafts
// with the same non-zero id replace each other until a message is sent.
func (b *botAPI) sendMessageDraft(ctx context.Context, chatID, threadID, draftID int64, text string) error {
	p := map[string]any{"chat_id": chatID, "draft_id": draftID, "text": text}
	if threadID != 0 {
		p["message_thread_id"] = threadID
	}
	return b.call(ctx, "sendMessageDraft", p, nil)
}

func (b *botAPI) editMessageText(ctx context.Context, chatID, messageID int64, text string) error {
	p := map[string]any{"chat_id": chatID, "message_id": messageID, "text": text, "link_preview_options": noPreview}
	return b.call(ctx, "editMessageText", p, nil)
}

// removeKeyboard takes the inline keyboard off a message.
func (b *botAPI) removeKeyboard(ctx context.Context, chatID, messageID int64) error {
	p := map[string]any{"chat_id": chatID, "message_id": messageID}
	return b.call(ctx, "editMessageReplyMarkup", p, nil)
}

func idString(n int64) string { return strconv.FormatInt(n, 10) }
