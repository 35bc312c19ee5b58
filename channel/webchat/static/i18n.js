// The app's words in each language it speaks, and the formats of numbers,
// durations and times for the user's language and time zone. One language
// at a time: the user's from GET /v1/me once signed in, the browser's
// before. Strings take {name} parameters; a function entry builds a string
// whose words depend on a number.

const ruPlural = new Intl.PluralRules('ru');

// ru picks the Russian form for n: one (1, 21), few (2–4, 22–24), many.
function ru(n, one, few, many) {
  const f = ruPlural.select(n);
  return f === 'one' ? one : f === 'few' ? few : many;
}

const en = {
  'app.skip': 'Skip to content',
  'nav.label': 'Main',
  'nav.chat': 'Chat',
  'nav.turns': 'Turns',
  'nav.board': 'Board',
  'nav.logout': 'Sign out',

  'title.login': 'Sign in — arbiter',
  'title.chat': 'Chat — arbiter',
  'title.turns': 'Turns — arbiter',
  'title.trace': 'Turn {id} — arbiter',
  'title.board': 'Board — arbiter',
  'title.card': 'Card {id} — arbiter',

  'login.title': 'Sign in',
  'login.key': 'API key',
  'login.help': 'The key stays in this browser tab only (session storage) and is sent to the server as a bearer token.',
  'login.submit': 'Sign in',
  'login.empty': 'Enter your API key.',
  'login.refused': 'The server did not accept this API key.',
  'login.failed': 'Could not sign in: {message}',
  'auth.again': 'The server did not accept the API key. Sign in again.',

  'api.unreachable': 'The server could not be reached ({message}).',
  'api.notJSON': 'The server answered with something that is not JSON.',

  'chat.title': 'Chat',
  'chat.conversations': 'Conversations',
  'chat.new': 'New',
  'chat.newHidden': ' conversation',
  'chat.conversation': 'Conversation',
  'chat.newConversation': 'New conversation',
  'chat.turns': 'Turns',
  'chat.turnsHidden': ' of this conversation',
  'chat.leaveSkill': 'Leave the skill',
  'chat.skill': 'Skill: {name}',
  'chat.message': 'Message',
  'chat.send': 'Send',
  'chat.help': 'Enter sends; Shift+Enter starts a new line.',
  'chat.you': 'You',
  'chat.assistant': 'Assistant',
  'chat.notDelivered': 'Not delivered.',
  'chat.repeated': 'repeated reply',
  'chat.result': 'Result',
  'chat.resultConfidence': 'Result · confidence {percent}%',
  'chat.suggested': 'Suggested replies',
  'chat.trace': 'Trace',
  'chat.traceHidden': ' of this reply',
  'chat.actionsRun': 'Actions run',
  'chat.confirmation': 'Confirmation',
  'chat.expires': 'Expires {time}',
  'chat.details': 'Details',
  'chat.tool': 'Tool: {tool}',
  'chat.busyRetryIn': 'The assistant is busy, retrying in {seconds} s…',
  'chat.busyRetry': 'The assistant is busy, retrying…',
  'chat.stillBusy': 'The assistant is still busy; the message was not processed.',
  'chat.refused': 'The message was refused: {message}',
  'chat.tooLong': 'This message is {bytes} bytes as sent (UTF-8); the server accepts at most {limit}. Shorten it or send it in parts.',
  'chat.typing': 'Assistant is typing…',
  'chat.waiting': 'The assistant is waiting for your answer to its question.',
  'chat.waitingIn': 'The assistant is waiting for your answer to its question in “{title}”.',
  'chat.typeFirst': 'Type an answer first.',
  'chat.answerRefused': 'The answer was refused: {message}',
  'chat.answerFailed': 'The answer could not be sent: {message}',
  'chat.sendAgain': 'Send again',

  'q.orType': 'Or type your answer',
  'q.yourAnswer': 'Your answer',
  'q.send': 'Send',
  'q.sendHidden': ' answer',
  'q.asks': 'The assistant asks',
  'q.answers': 'Answers',
  'q.sending': 'Sending your answer…',
  'q.answered': 'You answered: ',
  'q.late': 'This question had already closed, so your answer was not used.',
  'q.gone': 'This question has closed; the assistant went on without an answer from here.',

  'turns.title': 'Turns',
  'turns.filter': 'Filter turns',
  'turns.conversation': 'Conversation',
  'turns.status': 'Status',
  'turns.provider': 'Provider',
  'turns.show': 'Show',
  'turns.apply': 'Filter',
  'turns.clear': 'Clear',
  'turns.caption': 'Turns, newest first',
  'turns.started': 'Started',
  'turns.turn': 'Turn',
  'turns.user': 'User',
  'turns.route': 'Route',
  'turns.duration': 'Duration',
  'turns.cost': 'Cost',
  'turns.providers': 'Providers',
  'turns.more': 'Older turns',
  'turns.loading': 'Loading turns…',
  'turns.unsupported': 'This server does not list turns ({message}).',
  'turns.failed': 'The turns could not be loaded: {message}',
  'turns.none': 'No turns match.',
  'turns.summary': (p) => p.n + (p.n === 1 ? ' turn' : ' turns') + ' shown, total cost ' + p.cost + '.',
  'turns.ofConversation': 'Turns of this conversation',
  'cost.unknown': 'unknown',
  'turns.costWithUnknown': (p) => p.cost + ' and an unknown cost of ' + p.n + (p.n === 1 ? ' turn' : ' turns'),

  'trace.all': 'All turns',
  'trace.heading': 'Turn',
  'trace.loading': 'Loading the trace…',
  'trace.notFound': 'There is no turn {id} in your tenant.',
  'trace.failed': 'The trace could not be loaded: {message}',
  'trace.emptyRecord': 'The server sent an empty trace.',
  'trace.summary': 'Summary',
  'trace.conversation': 'Conversation',
  'trace.user': 'User',
  'trace.tenant': 'Tenant',
  'trace.channel': 'Channel',
  'trace.messageID': 'Message id',
  'trace.route': 'Route',
  'trace.status': 'Status',
  'trace.started': 'Started',
  'trace.duration': 'Duration',
  'trace.lockWait': 'Lock wait',
  'trace.cost': 'Cost',
  'trace.costUnknown': 'unknown (a model without a known price)',
  'trace.decidedBy': 'Decided by',
  'trace.noModel': 'no model',
  'trace.error': 'Error',
  'trace.reply': 'Reply',
  'trace.timeline': 'Timeline',
  'trace.lockNote': 'waiting for the conversation',
  'trace.noSteps': 'No steps were recorded.',
  'trace.scale': 'Bars are scaled to the whole turn ({total}). The lock wait is {lock}.',
  'trace.startingAt': ', starting at ',
  'trace.context': 'Context sources',
  'trace.noContext': 'No live context was fetched.',
  'trace.source': 'Source',
  'trace.sections': 'Sections',
  'trace.llm': 'Model calls',
  'trace.noLLM': 'No model was called.',
  'trace.attempt': 'Attempt',
  'trace.provider': 'Provider',
  'trace.model': 'Model',
  'trace.operation': 'Operation',
  'trace.tokens': 'Tokens in / cached / out',
  'trace.note': 'Note',
  'trace.prompt': 'Prompt',
  'trace.memory': 'Remembered messages',
  'trace.promptMessages': 'Prompt messages',
  'trace.promptSize': 'Prompt size',
  'trace.stablePrefix': 'Stable prefix',
  'trace.bytes': (p) => p.text + (p.n === 1 ? ' byte' : ' bytes'),
  'trace.decision': 'Decision',
  'trace.noDecision': 'No decision: no model was asked.',
  'trace.repair': 'Repair',
  'trace.repaired': 'The model repaired its output.',
  'trace.notRepaired': 'The output was not repaired.',
  'trace.firstProblems': 'Problems in the first output',
  'trace.firstOutput': 'First output',
  'trace.secondOutput': 'Second output',
  'trace.secondProblems': 'Problems in the second output',
  'trace.noProblems': 'No problems listed.',
  'trace.loop': 'Agent loop',
  'trace.toolCalls': 'Tool calls',
  'trace.resultBytes': 'Result bytes',
  'trace.ended': 'Ended',
  'trace.interview': 'Interview',
  'trace.questionsAsked': 'Questions asked',
  'trace.confidence': 'Confidence',
  'trace.reasoning': 'Why it asked',
  'trace.reasoningHidden': 'Hidden: only a key with turns:read_all reads the interviewer\u2019s reasoning.',
  'trace.dropped': 'Dropped',
  'trace.repairs': 'What the repairs told the model',
  'trace.review': 'Needs review',
  'trace.reason': 'Reason',
  'trace.detail': 'Detail',
  'trace.noDraft': 'The model left no draft.',
  'trace.vetoes': 'Vetoes',
  'trace.noVetoes': 'Nothing was vetoed.',
  'trace.vetoOn': ' on {tool}',
  'trace.confirmation': 'Confirmation',
  'trace.pendingAction': 'Pending action',
  'trace.tool': 'Tool',
  'trace.outcome': 'Outcome',
  'trace.noConfirmation': 'No confirmation in this turn.',
  'trace.executions': 'Executions',
  'trace.noExecutions': 'No tool ran.',
  'trace.idempotencyKey': 'Idempotency key',
  'trace.reused': 'Reused',
  'trace.reusedYes': 'yes — the earlier result was reused, the tool was not called again',
  'trace.arguments': 'Arguments',
  'trace.result': 'Result',
  'trace.text': 'Text',
  'trace.observed': 'Observed',
  'trace.field': 'Ambiguous field',
  'trace.candidates': 'Candidates',
  'trace.questionsProgress': 'Questions and progress',
  'trace.questions': 'Questions',
  'trace.noQuestions': 'Nothing was asked.',
  'trace.question': 'Question',
  'trace.answer': 'Answer',
  'trace.typed': 'typed an answer',
  'trace.progress': 'Progress',
  'trace.done': 'Done',
  'trace.message': 'Message',
  'trace.evidence': 'Evidence',
  'trace.noEvidence': 'No evidence came with the message.',
  'trace.evidenceHelp': 'Shown to the model as labelled data; evidence never confirms or requests an action.',
  'trace.from': ' from {source}',
  'trace.notes': 'Notes',
  'trace.raw': 'The whole record as JSON',

  'board.title': 'Board',
  'board.loading': 'Loading the board…',
  'board.none': 'This server has no task board.',
  'board.forbidden': 'Your API key may not read the board.',
  'board.failed': 'The board could not be loaded: {message}',
  'board.noColumns': 'The board has no columns yet.',
  'board.noCards': 'No cards.',
  'board.count': (p) => p.n + (p.n === 1 ? ' card' : ' cards'),
  'board.assignee': 'Assignee',
  'board.due': 'Due',
  'board.status': 'Status',
  'status.open': 'Open',
  'status.done': 'Done',

  'card.back': 'The whole board',
  'card.heading': 'Card {id}',
  'card.loading': 'Loading the card…',
  'card.notFound': 'There is no card {id} on the board.',
  'card.failed': 'The card could not be loaded: {message}',
  'card.id': 'Card',
  'card.column': 'Column',
  'card.createdBy': 'Created by',
  'card.createdAt': 'Created',
  'card.updatedAt': 'Updated',
  'card.doneAt': 'Done',
  'card.description': 'Description',
  'card.history': 'History',
  'card.noHistory': 'No history yet.',
  'history.created': 'Created',
  'history.comment': 'Comment',
  'history.done': 'Done',

  'unit.ms': 'ms',
  'unit.s': 's',
  'unit.min': 'min',
};

const ruText = {
  'app.skip': 'Перейти к содержимому',
  'nav.label': 'Главное меню',
  'nav.chat': 'Чат',
  'nav.turns': 'Ходы',
  'nav.board': 'Доска',
  'nav.logout': 'Выйти',

  'title.login': 'Вход — arbiter',
  'title.chat': 'Чат — arbiter',
  'title.turns': 'Ходы — arbiter',
  'title.trace': 'Ход {id} — arbiter',
  'title.board': 'Доска — arbiter',
  'title.card': 'Карточка {id} — arbiter',

  'login.title': 'Вход',
  'login.key': 'API-ключ',
  'login.help': 'Ключ хранится только в этой вкладке браузера, пока она открыта, и передаётся серверу в заголовке авторизации.',
  'login.submit': 'Войти',
  'login.empty': 'Введите API-ключ.',
  'login.refused': 'Сервер не принял этот API-ключ.',
  'login.failed': 'Не удалось войти: {message}',
  'auth.again': 'Сервер не принял API-ключ. Войдите снова.',

  'api.unreachable': 'Не удалось связаться с сервером ({message}).',
  'api.notJSON': 'Сервер ответил не в формате JSON.',

  'chat.title': 'Чат',
  'chat.conversations': 'Разговоры',
  'chat.new': 'Новый',
  'chat.newHidden': ' разговор',
  'chat.conversation': 'Разговор',
  'chat.newConversation': 'Новый разговор',
  'chat.turns': 'Ходы',
  'chat.turnsHidden': ' этого разговора',
  'chat.leaveSkill': 'Выйти из режима',
  'chat.skill': 'Режим: {name}',
  'chat.message': 'Сообщение',
  'chat.send': 'Отправить',
  'chat.help': 'Enter — отправить, Shift+Enter — новая строка.',
  'chat.you': 'Вы',
  'chat.assistant': 'Ассистент',
  'chat.notDelivered': 'Не доставлено.',
  'chat.repeated': 'повторный ответ',
  'chat.result': 'Результат',
  'chat.resultConfidence': 'Результат · уверенность {percent}%',
  'chat.suggested': 'Варианты ответа',
  'chat.trace': 'Трассировка',
  'chat.traceHidden': ' этого ответа',
  'chat.actionsRun': 'Выполненные действия',
  'chat.confirmation': 'Подтверждение',
  'chat.expires': 'Действует до {time}',
  'chat.details': 'Подробности',
  'chat.tool': 'Инструмент: {tool}',
  'chat.busyRetryIn': 'Ассистент занят, повтор через {seconds} с…',
  'chat.busyRetry': 'Ассистент занят, повторяю…',
  'chat.stillBusy': 'Ассистент всё ещё занят, сообщение не обработано.',
  'chat.refused': 'Сообщение не принято: {message}',
  'chat.tooLong': 'Это сообщение занимает {bytes} байт при отправке (UTF-8), а сервер принимает не больше {limit}. Сократите его или отправьте частями.',
  'chat.typing': 'Ассистент печатает…',
  'chat.waiting': 'Ассистент ждёт вашего ответа на свой вопрос.',
  'chat.waitingIn': 'Ассистент ждёт вашего ответа на свой вопрос в разговоре «{title}».',
  'chat.typeFirst': 'Сначала введите ответ.',
  'chat.answerRefused': 'Ответ не принят: {message}',
  'chat.answerFailed': 'Не удалось отправить ответ: {message}',
  'chat.sendAgain': 'Отправить ещё раз',

  'q.orType': 'Или введите свой ответ',
  'q.yourAnswer': 'Ваш ответ',
  'q.send': 'Отправить',
  'q.sendHidden': ' ответ',
  'q.asks': 'Ассистент спрашивает',
  'q.answers': 'Варианты ответа',
  'q.sending': 'Ответ отправляется…',
  'q.answered': 'Ваш ответ: ',
  'q.late': 'Этот вопрос уже закрылся, поэтому ваш ответ не учтён.',
  'q.gone': 'Вопрос закрыт: ассистент продолжил без ответа отсюда.',

  'turns.title': 'Ходы',
  'turns.filter': 'Отбор ходов',
  'turns.conversation': 'Разговор',
  'turns.status': 'Статус',
  'turns.provider': 'Провайдер',
  'turns.show': 'Показать',
  'turns.apply': 'Применить',
  'turns.clear': 'Сбросить',
  'turns.caption': 'Ходы, сначала новые',
  'turns.started': 'Начало',
  'turns.turn': 'Ход',
  'turns.user': 'Пользователь',
  'turns.route': 'Маршрут',
  'turns.duration': 'Длительность',
  'turns.cost': 'Стоимость',
  'turns.providers': 'Провайдеры',
  'turns.more': 'Более ранние ходы',
  'turns.loading': 'Загрузка ходов…',
  'turns.unsupported': 'Этот сервер не показывает ходы ({message}).',
  'turns.failed': 'Не удалось загрузить ходы: {message}',
  'turns.none': 'Подходящих ходов нет.',
  'turns.summary': (p) => 'Показано ' + p.n + ' ' + ru(p.n, 'ход', 'хода', 'ходов') + ', общая стоимость ' + p.cost + '.',
  'turns.ofConversation': 'Ходы этого разговора',
  'cost.unknown': 'неизвестна',
  'turns.costWithUnknown': (p) => p.cost + ' и неизвестная стоимость ' + p.n + ' ' + ru(p.n, 'хода', 'ходов', 'ходов'),

  'trace.all': 'Все ходы',
  'trace.heading': 'Ход',
  'trace.loading': 'Загрузка трассировки…',
  'trace.notFound': 'Хода {id} нет среди ваших.',
  'trace.failed': 'Не удалось загрузить трассировку: {message}',
  'trace.emptyRecord': 'Сервер прислал пустую трассировку.',
  'trace.summary': 'Сводка',
  'trace.conversation': 'Разговор',
  'trace.user': 'Пользователь',
  'trace.tenant': 'Арендатор',
  'trace.channel': 'Канал',
  'trace.messageID': 'Идентификатор сообщения',
  'trace.route': 'Маршрут',
  'trace.status': 'Статус',
  'trace.started': 'Начало',
  'trace.duration': 'Длительность',
  'trace.lockWait': 'Ожидание блокировки',
  'trace.cost': 'Стоимость',
  'trace.costUnknown': 'неизвестна (у модели нет известной цены)',
  'trace.decidedBy': 'Решила модель',
  'trace.noModel': 'без модели',
  'trace.error': 'Ошибка',
  'trace.reply': 'Ответ',
  'trace.timeline': 'Хронология',
  'trace.lockNote': 'ожидание разговора',
  'trace.noSteps': 'Шаги не записаны.',
  'trace.scale': 'Полосы соразмерны всему ходу ({total}). Ожидание блокировки — {lock}.',
  'trace.startingAt': ', начало через ',
  'trace.context': 'Источники контекста',
  'trace.noContext': 'Живой контекст не запрашивался.',
  'trace.source': 'Источник',
  'trace.sections': 'Разделы',
  'trace.llm': 'Вызовы модели',
  'trace.noLLM': 'Модель не вызывалась.',
  'trace.attempt': 'Попытка',
  'trace.provider': 'Провайдер',
  'trace.model': 'Модель',
  'trace.operation': 'Операция',
  'trace.tokens': 'Токены: вход / из кэша / выход',
  'trace.note': 'Примечание',
  'trace.prompt': 'Промпт',
  'trace.memory': 'Сообщений в памяти',
  'trace.promptMessages': 'Сообщений в промпте',
  'trace.promptSize': 'Размер промпта',
  'trace.stablePrefix': 'Неизменный префикс',
  'trace.bytes': (p) => p.text + ' ' + ru(p.n, 'байт', 'байта', 'байт'),
  'trace.decision': 'Решение',
  'trace.noDecision': 'Решения нет: модель не спрашивали.',
  'trace.repair': 'Исправление',
  'trace.repaired': 'Модель исправила свой ответ.',
  'trace.notRepaired': 'Ответ не исправлен.',
  'trace.firstProblems': 'Ошибки первого ответа',
  'trace.firstOutput': 'Первый ответ',
  'trace.secondOutput': 'Второй ответ',
  'trace.secondProblems': 'Ошибки второго ответа',
  'trace.noProblems': 'Ошибок не указано.',
  'trace.loop': 'Цикл вызовов',
  'trace.toolCalls': 'Вызовы инструментов',
  'trace.resultBytes': 'Байт в результатах',
  'trace.ended': 'Завершение',
  'trace.interview': 'Интервью',
  'trace.questionsAsked': 'Задано вопросов',
  'trace.confidence': 'Уверенность',
  'trace.reasoning': 'Зачем спрошено',
  'trace.reasoningHidden': 'Скрыто: рассуждения интервьюера читает только ключ с turns:read_all.',
  'trace.dropped': 'Отброшено',
  'trace.repairs': 'Что модели сказали исправления',
  'trace.review': 'Нужна проверка',
  'trace.reason': 'Причина',
  'trace.detail': 'Подробности',
  'trace.noDraft': 'Модель не оставила черновика.',
  'trace.vetoes': 'Запреты',
  'trace.noVetoes': 'Ничего не запрещено.',
  'trace.vetoOn': ' для {tool}',
  'trace.confirmation': 'Подтверждение',
  'trace.pendingAction': 'Ожидающее действие',
  'trace.tool': 'Инструмент',
  'trace.outcome': 'Итог',
  'trace.noConfirmation': 'В этом ходе подтверждения не было.',
  'trace.executions': 'Выполнение',
  'trace.noExecutions': 'Инструменты не запускались.',
  'trace.idempotencyKey': 'Ключ идемпотентности',
  'trace.reused': 'Повтор',
  'trace.reusedYes': 'да — взят прежний результат, инструмент повторно не вызывался',
  'trace.arguments': 'Аргументы',
  'trace.result': 'Результат',
  'trace.text': 'Текст',
  'trace.observed': 'Получено',
  'trace.field': 'Неоднозначное поле',
  'trace.candidates': 'Варианты',
  'trace.questionsProgress': 'Вопросы и ход работы',
  'trace.questions': 'Вопросы',
  'trace.noQuestions': 'Вопросов не было.',
  'trace.question': 'Вопрос',
  'trace.answer': 'Ответ',
  'trace.typed': 'ответ введён вручную',
  'trace.progress': 'Ход работы',
  'trace.done': 'Сделано',
  'trace.message': 'Сообщение',
  'trace.evidence': 'Материалы',
  'trace.noEvidence': 'К сообщению не приложено материалов.',
  'trace.evidenceHelp': 'Модель видит их как размеченные данные; материалы никогда не подтверждают и не запрашивают действий.',
  'trace.from': ' от {source}',
  'trace.notes': 'Заметки',
  'trace.raw': 'Вся запись в JSON',

  'board.title': 'Доска',
  'board.loading': 'Загрузка доски…',
  'board.none': 'На этом сервере нет доски задач.',
  'board.forbidden': 'Вашему API-ключу не разрешено читать доску.',
  'board.failed': 'Не удалось загрузить доску: {message}',
  'board.noColumns': 'На доске пока нет колонок.',
  'board.noCards': 'Карточек нет.',
  'board.count': (p) => p.n + ' ' + ru(p.n, 'карточка', 'карточки', 'карточек'),
  'board.assignee': 'Исполнитель',
  'board.due': 'Срок',
  'board.status': 'Статус',
  'status.open': 'Открыта',
  'status.done': 'Выполнена',

  'card.back': 'Вся доска',
  'card.heading': 'Карточка {id}',
  'card.loading': 'Загрузка карточки…',
  'card.notFound': 'Карточки {id} на доске нет.',
  'card.failed': 'Не удалось загрузить карточку: {message}',
  'card.id': 'Карточка',
  'card.column': 'Колонка',
  'card.createdBy': 'Автор',
  'card.createdAt': 'Создана',
  'card.updatedAt': 'Изменена',
  'card.doneAt': 'Выполнена',
  'card.description': 'Описание',
  'card.history': 'История',
  'card.noHistory': 'Истории пока нет.',
  'history.created': 'Создана',
  'history.comment': 'Комментарий',
  'history.done': 'Выполнена',

  'unit.ms': 'мс',
  'unit.s': 'с',
  'unit.min': 'мин',
};

const catalogs = {en, ru: ruText};

let lang = 'en';
let zone = browserZone();

// languageOf maps a language tag to one the app speaks.
export function languageOf(tag) {
  return typeof tag === 'string' && /^ru\b/i.test(tag) ? 'ru' : 'en';
}

export function browserLanguage() {
  return languageOf(navigator.language);
}

function browserZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

// validZone reports whether this browser knows the IANA zone name.
function validZone(name) {
  if (typeof name !== 'string' || name === '') return false;
  try {
    new Intl.DateTimeFormat('en', {timeZone: name});
    return true;
  } catch {
    return false;
  }
}

export function language() {
  return lang;
}

export function timeZone() {
  return zone;
}

// setLocale switches the language and the time zone (the browser's when
// none or an unknown one is given) and names the page's language.
export function setLocale(language, tz) {
  lang = catalogs[language] ? language : 'en';
  zone = validZone(tz) ? tz : browserZone();
  document.documentElement.lang = lang;
}

// t is the text of key in the current language, with params filled in.
export function t(key, params) {
  const v = catalogs[lang][key] ?? en[key];
  if (v === undefined) throw new Error('no text for ' + key);
  if (typeof v === 'function') return v(params || {});
  if (!params) return v;
  return v.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

// translatePage writes the current language into the page's own markup:
// data-i18n names an element's text, data-i18n-aria-label and
// data-i18n-title its attributes.
export function translatePage(root) {
  const scope = root || document;
  for (const el of scope.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of scope.querySelectorAll('[data-i18n-aria-label]')) el.setAttribute('aria-label', t(el.dataset.i18nAriaLabel));
  for (const el of scope.querySelectorAll('[data-i18n-title]')) el.setAttribute('title', t(el.dataset.i18nTitle));
}

// Formats. Numbers and dates follow the language; times are shown in the
// user's zone.

export function fmtNumber(n, options) {
  return new Intl.NumberFormat(lang, options).format(n);
}

function timeFormat(options) {
  return new Intl.DateTimeFormat(lang, Object.assign({timeZone: zone}, options));
}

// fmtDateTime is a date and time in the user's zone; zoned names the zone,
// for times a person acts on.
export function fmtDateTime(ms, zoned) {
  const s = timeFormat({dateStyle: 'medium', timeStyle: zoned ? 'short' : 'medium'}).format(ms);
  return zoned ? s + ' (' + zone + ')' : s;
}

export function fmtClockTime(ms) {
  return timeFormat({hour: '2-digit', minute: '2-digit'}).format(ms);
}

// fmtDay is a calendar date ("2026-12-02"), which has no zone.
export function fmtDay(year, month, day) {
  return new Intl.DateTimeFormat(lang, {weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC'})
    .format(Date.UTC(year, month - 1, day));
}
