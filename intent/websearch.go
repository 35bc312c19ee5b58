package intent

import (
	"strings"
	"unicode/utf8"
)

// webPatterns are what people ask a search engine: prices, rates,
// weather, opening hours, routes, reviews and ratings, "the best", top
// lists, promo codes, alternatives, news, schedules, results.
var webPatterns = CompileSet(
	"сколько стоит|стоят|стоить", "цен* на|в", "стоимост*", "почем",
	"курс* доллар*|евро|валют*|рубл*|юан*|биткоин*|крипт*", "котировк*", "бирж*",
	"прогноз* погод*", "погод*",
	"график* работ*", "режим* работ*", "часы|часах|часов работы", "время работы",
	"как добраться", "как доехать", "как проехать", "где находит*|находят*", "адрес* магазин*|офис*|компани*|отделени*|аптек*",
	"ближайш* аптек*|магазин*|банкомат*|заправк*|остановк*",
	"отзыв*", "рейтинг*", "лучш*", "топ 3|5|10|20|100", "промокод*", "купон*", "скидк*", "кэшбэк*",
	"аналог*", "альтернатив* для",
	"новост*", "что случил*", "что произошл*",
	"расписани* поезд*|электричек|автобус*|рейс*|самолет*", "афиш*", "билет* на",
	"когда выйдет|выходит", "дат* выход*", "вышел|вышла|вышли|вышло ли",
	"результат* матч*", "счет матч*", "кто выиграл", "победител*",
	"официальн* сайт*", "инструкци* по применени*", "характеристик*", "что лучше",
	"скачать", "ваканси*", "средн* зарплат*", "населени*", "столиц*", "в каком году",
	"тариф*", "пробк*", "трейлер*", "розыгрыш*",
)

// questionWords start a question a search may answer.
var questionWords = CompileSet("что", "как", "где", "когда", "почему", "зачем", "сколько", "какой|какая|какое|какие|какую|каким|каких",
	"кто", "чей|чья|чье|чьи", "куда", "откуда", "what", "how", "where", "when", "why", "which", "who")

// WebSearch reports whether text reads like a question for a search
// engine, and why: the pattern it holds, or "question" for a question
// longer than 15 characters with a question mark and a question word.
// It knows no context: "какой лучший способ объяснить ребёнку дроби"
// fires on "лучший" though no search is needed (a known limit).
func WebSearch(text string) (bool, string) {
	if p := webPatterns.First(text); p != "" {
		return true, p
	}
	if strings.Contains(text, "?") && utf8.RuneCountInString(strings.TrimSpace(text)) > 15 && questionWords.First(text) != "" {
		return true, "question"
	}
	return false, ""
}
