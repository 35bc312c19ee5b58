package telegram

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
)

// FileSourcePrefix starts the Evidence.Source of every file the channel
// describes: "telegram-file:<file_id>". A later action (a card attachment)
// can fetch the file with getFile; the id is valid for this bot only.
const FileSourcePrefix = "telegram-file:"

// maxEvidence caps the evidence items of one turn.
const maxEvidence = 20

// FileSource is the Evidence.Source naming a Telegram file.
func FileSource(fileID string) string { return FileSourcePrefix + fileID }

// FileID returns the Telegram file id of an Evidence.Source written by this
// channel, and false for any other source.
func FileID(source string) (string, bool) {
	id, ok := strings.CutPrefix(source, FileSourcePrefix)
	if !ok || id == "" || strings.ContainsAny(id, " \t\r\n") {
		return "", false
	}
	return id, true
}

// member is one update of an item: a single item has one, a batch several.
type member struct {
	id  string
	at  time.Time
	raw []byte
	u   *update
}

// turnPlan is what one item asks of the channel: a turn for the handler,
// notices of the channel's own, a button press.
type turnPlan struct {
	chatID   int64
	userID   int64
	threadID int64
	replyTo  int64 // the message a group reply (or an edit notice) answers
	group    bool
	lang     string
	known    bool
	in       *chat.Inbound // nil: nothing for the handler
	notices  []string      // sent before the reply
	callback *callbackQuery
	edited   bool
}

// buildPlan maps the updates of one item (all from one user in one chat)
// to a plan. Downloads and transcription happen here; their failures become
// descriptions or notices, never errors, so a turn is never lost to a file.
func (c *Channel) buildPlan(ctx context.Context, itemID string, members []member) turnPlan {
	var p turnPlan
	var tgLang string
	first := members[0].u
	switch {
	case first.CallbackQuery != nil:
		q := first.CallbackQuery
		p.callback, p.chatID, p.userID, tgLang = q, q.Message.Chat.ID, q.From.ID, q.From.LanguageCode
		p.group = q.Message.Chat.Type != "private"
		if q.Message.IsTopicMessage {
			p.threadID = q.Message.MessageThreadID
		}
		if r := q.Message.ReplyToMessage; r != nil {
			// Answer the user's message the keyboard answered, so a new
			// keyboard is again tied to its user.
			p.replyTo = r.MessageID
		}
	case first.EditedMessage != nil:
		m := first.EditedMessage
		p.chatID, p.userID, tgLang, p.replyTo, p.edited = m.Chat.ID, m.From.ID, m.From.LanguageCode, m.MessageID, true
		p.group = m.Chat.Type != "private"
		if m.IsTopicMessage {
			p.threadID = m.MessageThreadID
		}
	default:
		m := first.Message
		p.chatID, p.userID, tgLang = m.Chat.ID, m.From.ID, m.From.LanguageCode
		p.group = m.Chat.Type != "private"
		if m.IsTopicMessage {
			p.threadID = m.MessageThreadID
		}
	}
	id, known := c.cfg.Identify(p.userID)
	p.known = known
	if !known {
		p.lang = pickLang(tgLang, c.cfg.Language)
		return p
	}
	p.lang = pickLang(id.Language, tgLang, c.cfg.Language)
	in := &chat.Inbound{Identity: id, Chat: idString(p.chatID), MessageID: itemID, Channel: ChannelName}
	for _, m := range members {
		// Accepted into the inbox: a "да" that waited there (a crash, a
		// queue) still answers only what was shown before it came.
		if m.at.After(in.ReceivedAt) {
			in.ReceivedAt = m.at
		}
	}
	switch {
	case p.callback != nil:
		if p.callback.Data != "" { // a game button: answered, nothing to run
			in.Button = p.callback.Data
			p.in = in
		}
	case p.edited:
		p.notices = append(p.notices, say(p.lang, txtEdited))
	default:
		c.mapMessages(ctx, &p, in, members)
	}
	return p
}

// mapMessages fills in from messages: forwards become evidence, the
// user's own messages become the text (plus quotes and attachments).
func (c *Channel) mapMessages(ctx context.Context, p *turnPlan, in *chat.Inbound, members []member) {
	var words []string
	var ev []chat.Evidence
	for _, mb := range members {
		m := mb.u.Message
		if m == nil {
			continue
		}
		if p.replyTo == 0 || m.ForwardOrigin == nil {
			p.replyTo = m.MessageID
		}
		if m.ForwardOrigin != nil {
			ev = append(ev, c.forwardEvidence(ctx, m)...)
			continue
		}
		if t := strings.TrimSpace(stripMention(ownText(m), c.botUsername())); t != "" {
			words = append(words, t)
		}
		if q := quoteEvidence(m); q != nil {
			ev = append(ev, *q)
		}
		if m.Voice != nil {
			t, notice := c.transcribe(ctx, m.Voice, p.lang)
			if t != "" {
				words = append(words, t)
			}
			if notice != "" {
				p.notices = append(p.notices, notice)
			}
		}
		ev = append(ev, c.fileEvidence(ctx, m, false)...)
		if !readable(m) {
			p.notices = append(p.notices, say(p.lang, txtUnsupported))
		}
	}
	if len(ev) > maxEvidence {
		c.cfg.Logger.Warn("telegram: evidence capped", "item", in.MessageID, "items", len(ev), "kept", maxEvidence)
		ev = ev[:maxEvidence]
	}
	for i := range ev {
		ev[i].Text = c.capText(ev[i].Text)
	}
	in.Text = strings.Join(words, "\n\n")
	in.Evidence = ev
	if in.Text != "" || len(in.Evidence) > 0 {
		p.in = in
	}
}

func (c *Channel) botUsername() string {
	if u := c.username.Load(); u != nil {
		return *u
	}
	return ""
}

// forwardEvidence labels a forwarded message with its origin; its files
// follow as attachment evidence.
func (c *Channel) forwardEvidence(ctx context.Context, m *message) []chat.Evidence {
	text := strings.TrimSpace(ownText(m))
	if text == "" {
		text = "(no text: " + describeContent(m) + ")"
	}
	out := []chat.Evidence{{Kind: chat.EvidenceForward, Text: text, Source: originSource(m.ForwardOrigin)}}
	return append(out, c.fileEvidence(ctx, m, true)...)
}

// quoteEvidence is the message a reply answers (or the part of it the user
// quoted). In forum topics every message "replies" to the topic's first
// message; that is not a quote.
func quoteEvidence(m *message) *chat.Evidence {
	r := m.ReplyToMessage
	if r == nil || (m.IsTopicMessage && r.MessageID == m.MessageThreadID) {
		return nil
	}
	text := ""
	if m.Quote != nil {
		text = strings.TrimSpace(m.Quote.Text)
	}
	if text == "" {
		text = strings.TrimSpace(ownText(r))
	}
	if text == "" {
		text = "(no text: " + describeContent(r) + ")"
	}
	src := "reply to " + userName(r.From)
	if r.Date > 0 {
		src += ", " + unixDate(r.Date)
	}
	if r.ForwardOrigin != nil {
		src += "; forwarded from " + originSource(r.ForwardOrigin)
	}
	return &chat.Evidence{Kind: chat.EvidenceQuote, Text: text, Source: oneLine(src, 400)}
}

// fileEvidence describes the files of a message; text documents are read.
// The user's own voice is handled by transcribe, a forwarded one here.
func (c *Channel) fileEvidence(ctx context.Context, m *message, forwarded bool) []chat.Evidence {
	var out []chat.Evidence
	add := func(f *fileInfo, text string) *chat.Evidence {
		media, _, _ := strings.Cut(strings.ToLower(oneLine(f.MimeType, 100)), ";")
		out = append(out, chat.Evidence{Kind: chat.EvidenceAttachment, Text: text, Source: FileSource(oneLine(f.FileID, 200)), MediaType: strings.TrimSpace(media)})
		return &out[len(out)-1]
	}
	if n := len(m.Photo); n > 0 {
		ph := m.Photo[n-1]         // sizes come smallest first
		ph.MimeType = "image/jpeg" // Telegram sends every photo as JPEG
		c.fetchFile(ctx, &ph, add(&ph, fmt.Sprintf("photo %dx%d%s", ph.Width, ph.Height, sizeNote(ph.FileSize))))
	}
	if d := m.Document; d != nil && m.Animation == nil {
		if readByEngine(d) {
			c.fetchFile(ctx, d, add(d, describeFile("document", d)))
		} else {
			add(d, c.documentText(ctx, d))
		}
	}
	for _, f := range []struct {
		what string
		f    *fileInfo
	}{{"audio", m.Audio}, {"video", m.Video}, {"video message", m.VideoNote}, {"animation", m.Animation}} {
		if f.f != nil {
			add(f.f, describeFile(f.what, f.f)+"; content not read")
		}
	}
	if v := m.Voice; v != nil && forwarded {
		text := describeFile("voice message", v)
		if c.cfg.Transcribe != nil {
			if t, notice := c.transcribe(ctx, v, chat.DefaultLanguage); notice == "" {
				text += ", transcript:\n" + t
			} else {
				text += "; could not be transcribed"
			}
		} else {
			text += "; not transcribed"
		}
		add(v, text)
	}
	return out
}

// readByEngine reports whether a document is one the engine reads from
// its bytes: a PDF or a picture.
func readByEngine(d *fileInfo) bool {
	mime, _, _ := strings.Cut(strings.ToLower(d.MimeType), ";")
	mime = strings.TrimSpace(mime)
	return mime == "application/pdf" || strings.HasPrefix(mime, "image/") || strings.EqualFold(path.Ext(d.FileName), ".pdf")
}

// fetchFile downloads a photo or a document the engine reads into ev's
// Data, up to MaxFileBytes; a file it cannot fetch keeps its description
// with the reason, and the message goes on without it.
func (c *Channel) fetchFile(ctx context.Context, f *fileInfo, ev *chat.Evidence) {
	limit := c.cfg.MaxFileBytes
	if f.FileSize > limit {
		ev.Text += fmt.Sprintf("; too large to read (limit %s)", humanSize(limit))
		return
	}
	data, err := c.api.download(ctx, f.FileID, limit)
	switch {
	case errors.Is(err, errTooLarge):
		ev.Text += fmt.Sprintf("; too large to read (limit %s)", humanSize(limit))
	case err != nil:
		c.cfg.Logger.Warn("telegram: file download failed", "file", f.FileID, "err", err)
		ev.Text += "; could not be downloaded"
	default:
		ev.Data = data
	}
}

// documentText reads a text document (txt, md, csv, json) up to
// MaxEvidenceBytes, or describes any other file.
func (c *Channel) documentText(ctx context.Context, d *fileInfo) string {
	desc := describeFile("document", d)
	if !isTextDocument(d) {
		return desc + "; content not read"
	}
	limit := int64(c.cfg.MaxEvidenceBytes)
	if d.FileSize > limit {
		return fmt.Sprintf("%s; too large to read (limit %d bytes)", desc, limit)
	}
	data, err := c.api.download(ctx, d.FileID, limit)
	switch {
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("%s; too large to read (limit %d bytes)", desc, limit)
	case err != nil:
		c.cfg.Logger.Warn("telegram: document download failed", "file", d.FileID, "err", err)
		return desc + "; could not be downloaded"
	case !utf8.Valid(data):
		return desc + "; not UTF-8 text, content not read"
	}
	body := strings.TrimPrefix(string(data), "\uFEFF")
	return desc + ":\n" + body
}

func isTextDocument(d *fileInfo) bool {
	switch strings.ToLower(path.Ext(d.FileName)) {
	case ".txt", ".md", ".markdown", ".csv", ".json":
		return true
	}
	mime, _, _ := strings.Cut(strings.ToLower(d.MimeType), ";")
	switch strings.TrimSpace(mime) {
	case "text/plain", "text/markdown", "text/x-markdown", "text/csv", "application/json":
		return true
	}
	return false
}

// transcribe turns the user's voice into words, or returns the notice to
// send instead.
func (c *Channel) transcribe(ctx context.Context, v *fileInfo, lang string) (text, notice string) {
	if c.cfg.Transcribe == nil {
		return "", say(lang, txtVoiceOff)
	}
	data, err := c.api.download(ctx, v.FileID, c.cfg.MaxFileBytes)
	if err != nil {
		c.cfg.Logger.Warn("telegram: voice download failed", "file", v.FileID, "err", err)
		return "", say(lang, txtVoiceFailed)
	}
	mime := v.MimeType
	if mime == "" {
		mime = "audio/ogg"
	}
	t, err := c.cfg.Transcribe(ctx, data, mime)
	if t = strings.TrimSpace(t); err != nil || t == "" {
		c.cfg.Logger.Warn("telegram: transcription failed", "file", v.FileID, "err", err)
		return "", say(lang, txtVoiceFailed)
	}
	return t, ""
}

// capText cuts an evidence text to MaxEvidenceBytes on a character
// boundary, saying so.
func (c *Channel) capText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	limit := c.cfg.MaxEvidenceBytes
	if len(s) <= limit {
		return s
	}
	const mark = "\n[truncated]"
	cut := max(limit-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// describeContent names what a message holds, for messages without text.
func describeContent(m *message) string {
	switch {
	case len(m.Photo) > 0:
		return "photo"
	case m.Animation != nil:
		return describeFile("animation", m.Animation)
	case m.Document != nil:
		return describeFile("document", m.Document)
	case m.Voice != nil:
		return describeFile("voice message", m.Voice)
	case m.Audio != nil:
		return describeFile("audio", m.Audio)
	case m.Video != nil:
		return describeFile("video", m.Video)
	case m.VideoNote != nil:
		return "video message"
	case len(m.Sticker) > 0:
		return "sticker"
	case len(m.Location) > 0 || len(m.Venue) > 0:
		return "location"
	case len(m.Contact) > 0:
		return "contact"
	case len(m.Poll) > 0:
		return "poll"
	case len(m.Dice) > 0:
		return "dice"
	}
	return "empty message"
}

// describeFile: `document "report.pdf" (application/pdf, 1.2 MB)`.
func describeFile(what string, f *fileInfo) string {
	s := what
	if f.FileName != "" {
		s += " " + fmt.Sprintf("%q", oneLine(f.FileName, 120))
	}
	var attrs []string
	if f.MimeType != "" {
		attrs = append(attrs, oneLine(f.MimeType, 80))
	}
	if f.Duration > 0 {
		attrs = append(attrs, fmt.Sprintf("%d s", f.Duration))
	}
	if f.FileSize > 0 {
		attrs = append(attrs, humanSize(f.FileSize))
	}
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, ", ") + ")"
	}
	return s
}

func sizeNote(n int64) string {
	if n <= 0 {
		return ""
	}
	return ", " + humanSize(n)
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
