package mcptool

// textKey names a text this package shows users when a server asks them
// something; the words are ours, only the quoted parts are the server's.
type textKey int

const (
	txtSampling textKey = iota
	txtURL
	txtForm
	txtAllow
	txtDecline
	txtCancel
	txtDone
	txtFill
	txtSkip
	txtTrue
	txtFalse
	txtDefault
	txtPickOne
	txtPickSeveral
	txtRetry
)

var texts = map[string]map[textKey]string{
	"ru": {
		txtSampling:    "MCP-сервер «%s» (инструмент «%s») просит модель ответить, до %d токенов:\n%s\nРазрешить?",
		txtURL:         "MCP-сервер «%s» (инструмент «%s») просит открыть ссылку: %s\n%s\nСама она не откроется; откройте её, только если доверяете ей.",
		txtForm:        "MCP-сервер «%s» (инструмент «%s») просит данные: %s\nПоля: %s",
		txtAllow:       "✅ Разрешить",
		txtDecline:     "✖️ Отклонить",
		txtCancel:      "Отмена",
		txtDone:        "✅ Готово",
		txtFill:        "✅ Заполнить",
		txtSkip:        "Пропустить",
		txtTrue:        "Да",
		txtFalse:       "Нет",
		txtDefault:     "По умолчанию: %s",
		txtPickOne:     "Варианты: %s",
		txtPickSeveral: "Напишите через запятую: %s",
		txtRetry:       "Не подходит (%s), попробуйте ещё раз.",
	},
	"en": {
		txtSampling:    "The MCP server “%s” (tool “%s”) asks the model to answer, up to %d tokens:\n%s\nAllow?",
		txtURL:         "The MCP server “%s” (tool “%s”) asks you to open a link: %s\n%s\nIt is not opened for you; open it only if you trust it.",
		txtForm:        "The MCP server “%s” (tool “%s”) asks for input: %s\nFields: %s",
		txtAllow:       "✅ Allow",
		txtDecline:     "✖️ Decline",
		txtCancel:      "Cancel",
		txtDone:        "✅ Done",
		txtFill:        "✅ Fill in",
		txtSkip:        "Skip",
		txtTrue:        "Yes",
		txtFalse:       "No",
		txtDefault:     "Default: %s",
		txtPickOne:     "Options: %s",
		txtPickSeveral: "Write them separated by commas: %s",
		txtRetry:       "That does not fit (%s); please try again.",
	},
}

// txt is the text of key in lang; languages other than Russian get
// English.
func txt(lang string, key textKey) string {
	if t, ok := texts[lang]; ok {
		return t[key]
	}
	return texts["en"][key]
}
