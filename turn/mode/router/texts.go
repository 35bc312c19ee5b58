package router

import "github.com/arbiterhq/arbiter/tool"

// The router's own lines: the skill's switch and its steps, as a
// streaming channel shows them.
var (
	skillOnText   = tool.Localized{"ru": "Включён режим «%s».", "en": "The %s skill is on."}
	skillOffText  = tool.Localized{"ru": "Вернулся в обычный режим.", "en": "Back to the ordinary conversation."}
	routingText   = tool.Localized{"ru": "Разбираю запрос…", "en": "Reading your request…"}
	switchingText = tool.Localized{"ru": "Переключаю режим…", "en": "Switching mode…"}
)
