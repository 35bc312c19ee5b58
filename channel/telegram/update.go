package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The parts of Bot API objects the channel reads. Field names and shapes
// are those of https://core.telegram.org/bots/api.

type update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *message       `json:"message,omitempty"`
	EditedMessage *message       `json:"edited_message,omitempty"`
	CallbackQuery *callbackQuery `json:"callback_query,omitempty"`
}

type tgUser struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name,omitempty"`
	Username     string `json:"username,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}

type tgChat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private, group, supergroup, channel
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// messageOrigin is MessageOriginUser, MessageOriginHiddenUser,
// MessageOriginChat or MessageOriginChannel, told apart by Type.
type messageOrigin struct {
	Type            string  `json:"type"`
	Date            int64   `json:"date"`
	SenderUser      *tgUser `json:"sender_user,omitempty"`      // user
	SenderUserName  string  `json:"sender_user_name,omitempty"` // hidden_user
	SenderChat      *tgChat `json:"sender_chat,omitempty"`      // chat
	Chat            *tgChat `json:"chat,omitempty"`             // channel
	MessageID       int64   `json:"message_id,omitempty"`       // channel
	AuthorSignature string  `json:"author_signature,omitempty"` // chat, channel
}

type entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"` // UTF-16 code units
	Length int    `json:"length"`
	URL    string `json:"url,omitempty"`
}

// fileInfo covers PhotoSize, Document, Voice, Audio, Video, VideoNote and
// Animation: the fields the channel uses are common to them.
type fileInfo struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	Duration     int    `json:"duration,omitempty"`
}

type textQuote struct {
	Text string `json:"text"`
}

type message struct {
	MessageID       int64          `json:"message_id"`
	MessageThreadID int64          `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool           `json:"is_topic_message,omitempty"`
	From            *tgUser        `json:"from,omitempty"`
	Date            int64          `json:"date"`
	EditDate        int64          `json:"edit_date,omitempty"`
	Chat            tgChat         `json:"chat"`
	ForwardOrigin   *messageOrigin `json:"forward_origin,omitempty"`
	ReplyToMessage  *message       `json:"reply_to_message,omitempty"`
	Quote           *textQuote     `json:"quote,omitempty"`
	Text            string         `json:"text,omitempty"`
	Entities        []entity       `json:"entities,omitempty"`
	Caption         string         `json:"caption,omitempty"`
	CaptionEntities []entity       `json:"caption_entities,omitempty"`
	Photo           []fileInfo     `json:"photo,omitempty"`
	Document        *fileInfo      `json:"document,omitempty"`
	Voice           *fileInfo      `json:"voice,omitempty"`
	Audio           *fileInfo      `json:"audio,omitempty"`
	Video           *fileInfo      `json:"video,omitempty"`
	VideoNote       *fileInfo      `json:"video_note,omitempty"`
	Animation       *fileInfo      `json:"animation,omitempty"`
	// Content the channel does not read; present means "unsupported".
	Sticker  json.RawMessage `json:"sticker,omitempty"`
	Location json.RawMessage `json:"location,omitempty"`
	Contact  json.RawMessage `json:"contact,omitempty"`
	Poll     json.RawMessage `json:"poll,omitempty"`
	Venue    json.RawMessage `json:"venue,omitempty"`
	Dice     json.RawMessage `json:"dice,omitempty"`
}

type callbackQuery struct {
	ID              string   `json:"id"`
	From            tgUser   `json:"from"`
	Message         *message `json:"message,omitempty"` // date 0: inaccessible
	InlineMessageID string   `json:"inline_message_id,omitempty"`
	ChatInstance    string   `json:"chat_instance"`
	Data            string   `json:"data,omitempty"`
}

// Kinds of items, for joining forwards with the user's comment.
const (
	kindWords   = iota // the user's own message (text, caption, file, voice)
	kindForward        // a forwarded message: evidence only
	kindAlone          // a button, an edit, unsupported content, a batch
)

// routing is what the channel needs of an update before processing it.
type routing struct {
	relevant bool // false: answer 200 and ignore (service message, other type)
	chatID   int64
	userID   int64
	kind     int
}

// decodeUpdate parses one webhook or getUpdates body. An error means the
// body is not an Update (malformed JSON, no update_id); a well-formed update
// the channel does not handle (a service message, a bot's message, another
// update type) comes back with relevant=false.
func decodeUpdate(raw []byte) (*update, routing, error) {
	var u update
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, routing{}, fmt.Errorf("malformed update: %w", err)
	}
	if u.UpdateID <= 0 {
		return nil, routing{}, errors.New("malformed update: update_id is missing")
	}
	return &u, route(&u), nil
}

func route(u *update) routing {
	switch {
	case u.Message != nil:
		m := u.Message
		if !humanSender(m.From) || m.Chat.ID == 0 || m.Chat.Type == "channel" {
			return routing{}
		}
		r := routing{relevant: true, chatID: m.Chat.ID, userID: m.From.ID}
		switch {
		case m.ForwardOrigin != nil && hasContent(m):
			r.kind = kindForward
		case readable(m):
			r.kind = kindWords
		case hasContent(m):
			r.kind = kindAlone // unsupported content: a short answer
		default:
			return routing{} // service message
		}
		return r
	case u.EditedMessage != nil:
		m := u.EditedMessage
		if !humanSender(m.From) || m.Chat.ID == 0 || m.Chat.Type == "channel" || !hasContent(m) {
			return routing{}
		}
		return routing{relevant: true, chatID: m.Chat.ID, userID: m.From.ID, kind: kindAlone}
	case u.CallbackQuery != nil:
		q := u.CallbackQuery
		if q.ID == "" || !humanSender(&q.From) || q.Message == nil || q.Message.Chat.ID == 0 {
			return routing{} // inline-mode buttons are not ours
		}
		return routing{relevant: true, chatID: q.Message.Chat.ID, userID: q.From.ID, kind: kindAlone}
	}
	return routing{}
}

func humanSender(u *tgUser) bool { return u != nil && u.ID != 0 && !u.IsBot }

// readable: the message has something the channel maps to words or evidence.
func readable(m *message) bool {
	return strings.TrimSpace(m.Text) != "" || strings.TrimSpace(m.Caption) != "" || len(m.Photo) > 0 ||
		m.Document != nil || m.Voice != nil || m.Audio != nil || m.Video != nil || m.VideoNote != nil || m.Animation != nil
}

// hasContent: the message is a user's message rather than a service one.
func hasContent(m *message) bool {
	return readable(m) || len(m.Sticker) > 0 || len(m.Location) > 0 || len(m.Contact) > 0 ||
		len(m.Poll) > 0 || len(m.Venue) > 0 || len(m.Dice) > 0
}

// itemID is the inbox id of an update: chat id and update id.
func itemID(chatID, updateID int64) string { return idString(chatID) + ":" + idString(updateID) }

// orderKey is chat + user, the engine's conversation split.
func orderKey(chatID, userID int64) string { return idString(chatID) + ":" + idString(userID) }

// withLinks returns text with the URL of every text_link entity added after
// its anchor as " (url)", so a hidden link is not lost. Offsets are UTF-16
// code units; entities out of range are ignored.
func withLinks(text string, ents []entity) string {
	type ins struct {
		at  int
		url string
	}
	var adds []ins
	var units []uint16
	for _, e := range ents {
		if e.Type != "text_link" || e.URL == "" || e.Offset < 0 || e.Length <= 0 {
			continue
		}
		if units == nil {
			units = utf16.Encode([]rune(text))
		}
		end := e.Offset + e.Length
		if end > len(units) || end < e.Offset {
			continue
		}
		anchor := string(utf16.Decode(units[e.Offset:end]))
		if strings.Contains(anchor, e.URL) {
			continue
		}
		adds = append(adds, ins{at: end, url: e.URL})
	}
	if len(adds) == 0 {
		return text
	}
	sort.SliceStable(adds, func(i, j int) bool { return adds[i].at < adds[j].at })
	var b strings.Builder
	prev := 0
	for _, a := range adds {
		b.WriteString(string(utf16.Decode(units[prev:a.at])))
		b.WriteString(" (" + a.url + ")")
		prev = a.at
	}
	b.WriteString(string(utf16.Decode(units[prev:])))
	return b.String()
}

// ownText is the message's text or caption with hidden links kept.
func ownText(m *message) string {
	if m.Text != "" {
		return withLinks(m.Text, m.Entities)
	}
	return withLinks(m.Caption, m.CaptionEntities)
}

// stripMention removes the bot's own @username from the user's words
// ("@bot what's up", "/tasks@bot"), case-insensitively and only as a whole
// word. Text that is nothing but the mention is kept.
func stripMention(text, username string) string {
	if username == "" {
		return text
	}
	at := "@" + strings.ToLower(username)
	// Usernames are ASCII: lower-case ASCII letters only, so byte offsets
	// of text and lower agree.
	text = strings.ToValidUTF8(text, "\uFFFD")
	lower := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, text)
	var b strings.Builder
	prev := 0
	for i := 0; ; {
		j := strings.Index(lower[i:], at)
		if j < 0 {
			break
		}
		j += i
		end := j + len(at)
		if (end == len(lower) || !isUsernameByte(lower[end])) && (j == 0 || !isUsernameByte(lower[j-1]) || isCommand(lower[:j])) {
			b.WriteString(text[prev:j])
			prev = end
		}
		i = end
	}
	if prev == 0 {
		return text
	}
	b.WriteString(text[prev:])
	out := b.String()
	for strings.Contains(out, "  ") {
		out = strings.ReplaceAll(out, "  ", " ")
	}
	if out = strings.TrimSpace(out); out == "" {
		return text
	}
	return out
}

// isCommand: the text before a mention ends with a bot command ("/tasks").
func isCommand(before string) bool {
	word := before[strings.LastIndexAny(before, " \t\r\n")+1:]
	return len(word) > 1 && word[0] == '/'
}

func isUsernameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// userName renders a Telegram user: "First Last (@username)".
func userName(u *tgUser) string {
	if u == nil {
		return "unknown user"
	}
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if u.Username != "" {
		if name == "" {
			return "@" + u.Username
		}
		name += " (@" + u.Username + ")"
	}
	if name == "" {
		name = "user " + idString(u.ID)
	}
	return name
}

// chatName renders a chat by its title (or names) and @username.
func chatName(c *tgChat) string {
	if c == nil {
		return "unknown chat"
	}
	name := c.Title
	if name == "" {
		name = strings.TrimSpace(c.FirstName + " " + c.LastName)
	}
	name = strconv.Quote(name)
	if c.Username != "" {
		name += " (@" + c.Username + ")"
	}
	return name
}

// originSource describes where a forwarded message came from, with its
// original date.
func originSource(o *messageOrigin) string {
	var s string
	switch o.Type {
	case "user":
		s = userName(o.SenderUser)
	case "hidden_user":
		s = "hidden user " + strconv.Quote(o.SenderUserName)
	case "chat":
		s = "chat " + chatName(o.SenderChat)
	case "channel":
		s = "channel " + chatName(o.Chat)
		if o.Chat != nil && o.Chat.Username != "" && o.MessageID > 0 {
			s += " https://t.me/" + o.Chat.Username + "/" + idString(o.MessageID)
		}
	default:
		s = "unknown origin"
	}
	if o.AuthorSignature != "" {
		s += ", signed " + strconv.Quote(o.AuthorSignature)
	}
	if o.Date > 0 {
		s += ", " + unixDate(o.Date)
	}
	return oneLine(s, 300)
}

func unixDate(sec int64) string {
	return time.Unix(sec, 0).UTC().Format("2006-01-02 15:04 UTC")
}

// oneLine makes user-controlled names safe for a label: control characters
// become spaces, the result is valid UTF-8 of at most n runes.
func oneLine(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}
