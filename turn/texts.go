package turn

import "fmt"

// text keys of the server's own replies. Everything the server says on its
// own authority (confirmations, vetoes, errors) is rendered from here, never
// taken from the model.
type textKey int

const (
	txtConfirmHeader textKey = iota
	txtConfirmQuestion
	txtYes
	txtNo
	txtCancelled
	txtExpired
	txtStaleButton
	txtNothingPending
	txtYesBeforeShown
	txtNotAvailable
	txtRephrase
	txtNoModel
	txtModelDown
	txtEmpty
	txtEvidenceOnlyWrite
	txtHelp
	txtHelpCancel
	txtHelpReset
	txtNoModelBare
	txtReset
	txtToolFailed
	txtToolNotFound
	txtOutcomeUnknown
	txtDone
	txtClarify
	txtNoAttachment
	txtCallArgs
	txtPreviewFailed
	txtFromUntrusted
	txtReadBefore
	txtHandedOff
	txtOutsideCase
	txtCaseClosed
	txtSentForApproval
	txtActionRejected
	txtChoiceGone
	txtButtonGone
	txtLinkCut
	txtImageRemoved
	txtFromForward
	txtFromAttachment
	txtFromQuote
	txtFromToolResult
	txtConfirmBatchHeader
	txtConfirmBatchQuestion
	txtRequestRefused
	txtReceiptProposed
	txtReceiptApproved
	txtReceiptConfirmed
	txtReceiptFailed
	txtReceiptRejected
	txtReceiptExpired
	txtReceiptUnknown
	txtReceiptAwaitYes
	txtSuperseded
	txtSupersededAction
	txtQuoted
	txtDraftPublish
	txtDraftEdit
	txtDraftCancel
	txtDraftEditAsk
	txtDraftCancelled
	txtWorkingOn
	txtAwaitingApproval
)

var texts = map[string]map[textKey]string{
	"ru": {
		txtConfirmHeader:     "Подтвердите действие: %s",
		txtConfirmQuestion:   "Выполнить?",
		txtYes:               "✅ Да",
		txtNo:                "✖️ Нет",
		txtCancelled:         "Отменено, ничего не выполнено.",
		txtExpired:           "Время на подтверждение истекло, действие не выполнено. Повторите запрос, если оно ещё нужно.",
		txtStaleButton:       "Эта кнопка относится к действию, которое уже не ждёт подтверждения. Ничего не выполнено.",
		txtNothingPending:    "Нет действия, ожидающего подтверждения. Ничего не выполнено.",
		txtYesBeforeShown:    "Когда пришло ваше сообщение, подтверждать было нечего, поэтому ничего не выполнено. Действие выше ждёт ответа: нажмите кнопку или напишите «да» ещё раз.",
		txtNotAvailable:      "Это действие мне недоступно, поэтому я его не выполнил.",
		txtCallArgs:          "Аргументы не подходят к схеме инструмента, ничего не выполнено: %s",
		txtRephrase:          "Не получилось разобрать запрос. Сформулируйте, пожалуйста, ещё раз.",
		txtNoModel:           "Модель не настроена. Задайте одну из переменных окружения %s или добавьте модель в раздел models конфигурации (виды моделей: %s; см. README). Команды работают и без модели: %s.",
		txtNoModelBare:       "Модель не настроена (см. README). Команды работают и без модели: %s.",
		txtModelDown:         "Извините, модели сейчас недоступны, поэтому я ничего не выполнил. Попробуйте, пожалуйста, чуть позже.",
		txtEmpty:             "Пустое сообщение: напишите, что нужно сделать.",
		txtEvidenceOnlyWrite: "Пересланное или вложенное — это данные, а не команда. Напишите своими словами, что с этим сделать.",
		txtHelp:              "Напишите своими словами, что нужно. Команды: %s.",
		txtHelpCancel:        "отменить ожидающее действие",
		txtHelpReset:         "начать разговор заново",
		txtReset:             "Начинаем заново: история разговора очищена.",
		txtToolFailed:        "Не удалось выполнить «%s»: %s",
		txtToolNotFound:      "Не найдено: %s",
		txtOutcomeUnknown:    "Неизвестно, выполнилось ли «%s»: система не ответила. Повторно не запускаю — проверьте результат вручную.",
		txtDone:              "Готово: %s",
		txtClarify:           "Уточните, пожалуйста:",
		txtNoAttachment:      "Прикрепить можно только файл, который вы сами прислали в этом разговоре. Если его ещё нет — пришлите файл и повторите просьбу.",
		txtFromUntrusted:     "Эти значения взяты из пересланного или найденного, а не из ваших слов: %s. Проверьте их.",
		txtReadBefore:        "Предложено после чтения чужого содержимого (%s). Проверьте, что вы об этом просили.",
		txtPreviewFailed:     "Не удалось проверить, что изменит «%s», поэтому ничего не выполнено и подтверждать нечего. Попробуйте чуть позже.",
		txtHandedOff:         "Я передал обращение сотруднику: он проверит и ответит вам.",
		txtOutsideCase:       "Это действие относится не к текущему обращению, поэтому я его не выполнил.",
		txtCaseClosed:        "Обращение закрыто.",
		txtSentForApproval:   "«%s» передано на согласование сотруднику. Пока он не одобрит, ничего не выполнено.",
		txtActionRejected:    "Сотрудник отклонил «%s», ничего не выполнено.",
		txtChoiceGone:        "Этот вариант уже не действует: выбор сделан раньше или предложение устарело. Ничего не выполнено — повторите запрос.",
		txtButtonGone:        "Эта кнопка устарела. Ничего не выполнено — повторите запрос.",
		txtLinkCut:           "(параметры ссылки убраны)",
		txtImageRemoved:      "[изображение с %s убрано]",
		txtFromForward:       "из пересланного",
		txtFromAttachment:    "из вложения",
		txtFromQuote:         "из цитаты",
		txtFromToolResult:    "из ответа %s",

		// Several calls of one answer, confirmed together.
		txtConfirmBatchHeader:   "Подтвердите действия (%d):",
		txtConfirmBatchQuestion: "Выполнить все?",
		txtRequestRefused:       "Сервис модели не принял этот запрос, поэтому я ничего не выполнил. Попробуйте сформулировать иначе.",
		txtReceiptProposed:      "%s: ожидает подтверждения сотрудника, пока не выполнено.",
		txtReceiptApproved:      "%s: одобрено, выполняется.",
		txtReceiptConfirmed:     "%s: выполнено, подтверждено системой.",
		txtReceiptFailed:        "%s: не выполнено.",
		txtReceiptRejected:      "%s: отклонено сотрудником, не выполнено.",
		txtReceiptExpired:       "%s: не одобрено вовремя, не выполнено.",
		txtReceiptUnknown:       "%s: результат неизвестен, его проверят вручную.",
		txtReceiptAwaitYes:      "%s: ждёт вашего подтверждения, пока не выполнено.",
		txtSuperseded:           "%s отменено: новое сообщение пришло вместо подтверждения, ничего не выполнено.",
		txtSupersededAction:     "Действие «%s»",
		txtQuoted:               "«%s»",
		txtDraftPublish:         "Опубликовать",
		txtDraftEdit:            "Изменить",
		txtDraftCancel:          "Отменить",
		txtDraftEditAsk:         "Напишите, что изменить в черновике. Пока он не опубликован.",
		txtDraftCancelled:       "Черновик отменён, ничего не опубликовано.",
		txtWorkingOn:            "Выполняю «%s»…",
		txtAwaitingApproval:     "«%s» ждёт согласования сотрудника…",
	},
	"en": {
		txtConfirmHeader:     "Please confirm: %s",
		txtConfirmQuestion:   "Go ahead?",
		txtYes:               "✅ Yes",
		txtNo:                "✖️ No",
		txtCancelled:         "Cancelled; nothing was done.",
		txtExpired:           "The confirmation expired; nothing was done. Ask again if you still need it.",
		txtStaleButton:       "This button belongs to an action that is no longer waiting for confirmation. Nothing was done.",
		txtNothingPending:    "Nothing is waiting for confirmation. Nothing was done.",
		txtYesBeforeShown:    "Nothing was waiting for confirmation when your message arrived, so nothing was done. The action above is waiting for an answer: press a button or say yes again.",
		txtNotAvailable:      "That action is not available to me, so I did not do it.",
		txtCallArgs:          "The arguments do not fit the tool's schema; nothing was done: %s",
		txtRephrase:          "I could not make sense of that. Please rephrase your request.",
		txtNoModel:           "No model provider is configured. Set one of the environment variables %s, or add a model to the configuration's models section (model kinds: %s; see README). Commands work without a model: %s.",
		txtNoModelBare:       "No model provider is configured (see README). Commands work without a model: %s.",
		txtModelDown:         "Sorry, the models are unavailable right now, so I did nothing. Please try again shortly.",
		txtEmpty:             "Empty message: tell me what you need.",
		txtEvidenceOnlyWrite: "Forwarded or attached material is data, not a command. Tell me in your own words what to do with it.",
		txtHelp:              "Write what you need in your own words. Commands: %s.",
		txtHelpCancel:        "drop the pending action",
		txtHelpReset:         "start over",
		txtReset:             "Starting over: the conversation history is cleared.",
		txtToolFailed:        "Could not do \"%s\": %s",
		txtToolNotFound:      "Not found: %s",
		txtOutcomeUnknown:    "It is unknown whether \"%s\" happened: the system did not answer. I am not repeating it; please check the result.",
		txtDone:              "Done: %s",
		txtClarify:           "Please clarify:",
		txtNoAttachment:      "I can only attach a file you sent yourself in this conversation. If there is none yet, send it and ask again.",
		txtFromUntrusted:     "These values come from forwarded or retrieved content, not from your words: %s. Check them.",
		txtReadBefore:        "Proposed after reading content of others (%s). Check that you asked for it.",
		txtPreviewFailed:     "I could not check what \"%s\" would change, so nothing was done and nothing waits for confirmation. Please try again shortly.",
		txtHandedOff:         "I have passed this to a colleague, who will check it and get back to you.",
		txtOutsideCase:       "That action is outside the current case, so I did not do it.",
		txtCaseClosed:        "The case is closed.",
		txtSentForApproval:   "\"%s\" is waiting for a colleague's approval; nothing is done until they approve it.",
		txtActionRejected:    "A colleague rejected \"%s\"; nothing was done.",
		txtChoiceGone:        "That option is no longer open: a choice was made already or the offer is out of date. Nothing was done; please ask again.",
		txtButtonGone:        "That button is out of date. Nothing was done; please ask again.",
		txtLinkCut:           "(link parameters removed)",
		txtImageRemoved:      "[image from %s removed]",
		txtFromForward:       "from a forward",
		txtFromAttachment:    "from an attachment",
		txtFromQuote:         "from a quote",
		txtFromToolResult:    "from the result of %s",

		// Several calls of one answer, confirmed together.
		txtConfirmBatchHeader:   "Please confirm %d actions:",
		txtConfirmBatchQuestion: "Go ahead with all of them?",
		txtRequestRefused:       "The model's service did not accept this request, so I did nothing. Please rephrase it.",
		txtReceiptProposed:      "%s: waiting for a colleague's approval; not done yet.",
		txtReceiptApproved:      "%s: approved, being carried out.",
		txtReceiptConfirmed:     "%s: done, confirmed by the system.",
		txtReceiptFailed:        "%s: not done.",
		txtReceiptRejected:      "%s: rejected by a colleague; not done.",
		txtReceiptExpired:       "%s: not approved in time; not done.",
		txtReceiptUnknown:       "%s: the outcome is unknown and will be checked by hand.",
		txtReceiptAwaitYes:      "%s: waiting for your confirmation; not done yet.",
		txtSuperseded:           "%s is cancelled: a new message came instead of a confirmation, so nothing was done.",
		txtSupersededAction:     "The action “%s”",
		txtQuoted:               "“%s”",
		txtDraftPublish:         "Publish",
		txtDraftEdit:            "Edit",
		txtDraftCancel:          "Cancel",
		txtDraftEditAsk:         "Tell me what to change in the draft. It is not published yet.",
		txtDraftCancelled:       "The draft is cancelled; nothing was published.",
		txtWorkingOn:            "Working on “%s”…",
		txtAwaitingApproval:     "“%s” waits for a colleague's approval…",
	},
}

// say renders a server text in lang (chat.Language's default when lang
// has no texts).
func say(lang string, key textKey, args ...any) string {
	t, ok := texts[lang]
	if !ok {
		t = texts[DefaultLanguage]
	}
	if len(args) == 0 {
		return t[key]
	}
	return fmt.Sprintf(t[key], args...)
}
