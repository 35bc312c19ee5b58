package telegram

import "github.com/arbiterhq/arbiter/chat"

// textKey names a message the channel says on its own (not the engine's).
type textKey int

const (
	txtRefusal textKey = iota
	txtVoiceOff
	txtVoiceFailed
	txtEdited
	txtUnsupported
	txtForeignButton
	txtStaleButton
	txtUsedButton
	txtGiveUp
	txtChoose
	txtOrType
	txtQuestionClosed
	txtWorking
)

var texts = map[string]map[textKey]string{
	"ru": {
		txtRefusal:        "Извините, я работаю только с подключёнными пользователями, поэтому не могу ответить. Если вам нужен доступ, обратитесь к администратору.",
		txtVoiceOff:       "Голосовые сообщения не включены. Напишите, пожалуйста, текстом.",
		txtVoiceFailed:    "Не удалось распознать голосовое сообщение. Напишите, пожалуйста, текстом.",
		txtEdited:         "Исправленные сообщения я не обрабатываю, и по ним ничего не выполняется. Отправьте исправленный текст новым сообщением.",
		txtUnsupported:    "Такие сообщения я не читаю. Напишите текстом, перешлите сообщение или пришлите файл.",
		txtForeignButton:  "Эта кнопка для другого пользователя. Ничего не выполнено.",
		txtStaleButton:    "Эта кнопка больше не действует. Ответьте, пожалуйста, сообщением.",
		txtUsedButton:     "Эта кнопка уже нажата.",
		txtGiveUp:         "Извините, не получилось обработать ваше сообщение, и ничего не выполнено. Отправьте его, пожалуйста, ещё раз чуть позже.",
		txtChoose:         "Выберите:",
		txtOrType:         "Или ответьте сообщением.",
		txtQuestionClosed: "Этот вопрос уже закрыт.",
		txtWorking:        "⏳ %s",
	},
	"en": {
		txtRefusal:        "Sorry, I only work with users who have been set up for me, so I cannot help here. If you need access, please ask your administrator.",
		txtVoiceOff:       "Voice messages are not enabled. Please type your message.",
		txtVoiceFailed:    "I could not transcribe the voice message. Please type it.",
		txtEdited:         "I do not process edited messages, and nothing is done because of an edit. Please send the corrected text as a new message.",
		txtUnsupported:    "I cannot read this kind of message. Please write text, forward a message or send a file.",
		txtForeignButton:  "This button is for another user. Nothing was done.",
		txtStaleButton:    "This button is no longer active. Please answer with a message.",
		txtUsedButton:     "This button was already pressed.",
		txtGiveUp:         "Sorry, I could not process your message, and nothing was done. Please send it again a little later.",
		txtChoose:         "Choose:",
		txtOrType:         "Or answer with a message.",
		txtQuestionClosed: "This question is already closed.",
		txtWorking:        "⏳ %s",
	},
}

// pickLang returns the first of the candidates the channel has texts for.
// pickLang is chat.Language, the rule the engine follows too.
func pickLang(candidates ...string) string { return chat.Language(candidates...) }

func say(lang string, k textKey) string {
	if t, ok := texts[lang][k]; ok {
		return t
	}
	return texts[chat.DefaultLanguage][k]
}
