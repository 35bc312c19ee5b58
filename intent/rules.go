package intent

// The word lists of a router's intercepts and guards. Each was added
// after a real complaint; the tests name it.

// Markers are words that make a short reply a new task rather than the
// answer to an interview's question (письмо, календарь, документ, найди,
// товар, пост, видео, …).
var Markers = CompileSet("письм*", "почт*", "календар*", "встреч*", "документ*", "таблиц*", "файл*", "найди", "найти", "поищи",
	"товар*", "подбери", "купи*", "пост*", "стать*", "видео*", "картинк*", "фото*", "музык*", "статистик*", "метрик*",
	"сайт*", "погод*", "новост*", "курс*", "напомни", "задач*")

// buyWords say the user wants to buy; sellWords that they sell.
var (
	buyWords  = CompileSet("куп*", "подбери", "подобрать", "ищу", "нужен|нужна|нужно|нужны", "посоветуй", "хочу взять", "закажи", "заказать")
	sellWords = CompileSet("прода*", "выстав*", "объявлени*", "за сколько продать")
)

// Buying reports whether text asks to buy and does not speak of selling.
func Buying(text string) bool { return buyWords.First(text) != "" && sellWords.First(text) == "" }

// infoWhere are information questions about where to get something;
// niche goods are what a marketplace search serves badly.
var (
	infoWhere  = CompileSet("где купить", "где найти", "где заказать", "где достать", "где взять")
	nicheGoods = CompileSet("запчаст*", "б/у", "бу", "антиквариат*", "винтаж*", "раритет*", "самодельн*")
)

// InfoQuestion reports whether text asks where to get something, or is
// about goods a product search serves badly; it names which.
func InfoQuestion(text string) (bool, string) {
	if p := infoWhere.First(text); p != "" {
		return true, p
	}
	if p := nicheGoods.First(text); p != "" {
		return true, p
	}
	return false, ""
}

// createVerbs and contentNouns: a post or article is drafted only for a
// request that pairs a creation verb with a content noun.
var (
	createVerbs  = CompileSet("напиши", "написать", "сделай", "сделать", "создай", "создать", "подготовь", "подготовить", "составь", "составить", "сочини", "опубликуй")
	contentNouns = CompileSet("пост*", "стать*", "текст*", "заметк*", "публикаци*", "лонгрид*", "анонс*")
)

// CreationRequest reports whether text asks to create content: a creation
// verb and a content noun.
func CreationRequest(text string) bool {
	return createVerbs.First(text) != "" && contentNouns.First(text) != ""
}

// deleteWords are an explicit request to delete.
var deleteWords = CompileSet("удали", "удалить", "удалите", "убери", "убрать", "сотри", "delete", "remove")

// DeleteRequest reports whether text explicitly asks to delete.
func DeleteRequest(text string) bool { return deleteWords.First(text) != "" }

// editVerbs start an edit of an open document; newWords ask for a new
// one instead ("создай новую таблицу").
var (
	editVerbs = CompileSet("добавь", "допиши", "исправь", "поправь", "замени", "поменяй", "удали", "убери", "вставь", "переименуй", "отсортируй", "выдели")
	newWords  = CompileSet("нов*", "создай", "создать", "сделай")
)

// EditRequest reports whether text is an unambiguous edit of what is open:
// an edit verb, no request for something new, and none of the markers of
// another task (a mail, a goal in Metrika, …).
func EditRequest(text string) bool {
	return editVerbs.First(text) != "" && newWords.First(text) == "" && otherTask.First(text) == ""
}

// otherTask are words that point an edit verb elsewhere than the open
// document ("добавь цель в Метрике" with a table open).
var otherTask = CompileSet("метрик*", "цел*", "фильтр*", "сегмент*", "календар*", "встреч*", "письм*", "задач*", "корзин*")

// leaveSkill are the words that leave a skill ("вернись в обычный режим",
// "давай не про питание").
var leaveSkill = CompileSet("вернись|верни|вернуться в обычн* режим*", "обычн* режим*", "выйди|выйти из режим*|навык*", "давай не про", "хватит про", "сменим тему", "другая тема")

// LeaveSkill reports whether text asks to leave the current skill.
func LeaveSkill(text string) bool { return leaveSkill.First(text) != "" }

// sceneWords put a person somewhere or make them someone; selfWords say
// the person is the user (on the photo they sent); describeWords ask what
// a photo shows instead.
var (
	sceneWords = CompileSet("помести*", "поставь", "перенеси", "нарисуй", "дорисуй", "пририсуй", "сгенерируй", "преврати", "сделай",
		"замени|поменяй|смени фон", "на фоне", "в образе", "в стиле", "в костюм*", "одень|переодень")
	selfWords     = CompileSet("меня", "мне", "мной", "нас", "себя", "я", "мо* фото*|снимк*|лиц*|портрет*")
	describeWords = CompileSet("опиши", "описать", "что на", "кто на", "что изображен*", "что видишь", "расскажи", "распознай", "оцени", "прочитай", "что это", "какая это|какой это|какое это")
)

// PhotoScene reports whether text, sent with a photo, asks to draw the
// user into a scene («сделай меня у Эйфелевой башни») rather than to say
// what the photo shows.
func PhotoScene(text string) bool {
	return sceneWords.First(text) != "" && selfWords.First(text) != "" && describeWords.First(text) == ""
}

// settingNouns are what a counter's settings are made of: a goal, a
// filter, a segment — a setting, not figures («добавь цель в Метрике»).
var settingNouns = CompileSet("цел*", "фильтр*", "сегмент*", "настро*|настройк* счетчик*|метрик*")

// SettingsRequest reports whether text is about a counter's settings
// rather than its figures.
func SettingsRequest(text string) bool { return settingNouns.First(text) != "" }
