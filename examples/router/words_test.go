package main

import (
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/intent"
)

// routerWords are the word lists arbiter.yaml gives the router, compiled
// as the server compiles them.
func routerWords(t *testing.T) *intent.Lexicon {
	t.Helper()
	cfg, err := config.LoadEnv("arbiter.yaml", func(name string) string { return map[string]string{"OPENAI_API_KEY": "sk-test"}[name] })
	if err != nil {
		t.Fatal(err)
	}
	words, err := cfg.Assistants["main"].Router.LoadWords(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := intent.CompileLexicon(words)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Each list of words.yaml on the requests behind it, and on near-misses.
func TestRouterWords(t *testing.T) {
	w := routerWords(t)
	check := func(name string, f func(string) bool, yes, no []string) {
		t.Helper()
		for _, s := range yes {
			if !f(s) {
				t.Errorf("%s(%q) = false", name, s)
			}
		}
		for _, s := range no {
			if f(s) {
				t.Errorf("%s(%q) = true", name, s)
			}
		}
	}
	check("Buying", w.Buying,
		[]string{"подбери увлажнитель до 8000 рублей", "хочу купить велосипед", "нужна куртка на зиму"},
		[]string{"продам велосипед за 5000", "выставь мой курс за 3000", "как дела"})
	check("InfoQuestion", func(s string) bool { ok, _ := w.InfoQuestion(s); return ok },
		[]string{"где купить запчасти на запорожец", "Где купить увлажнитель", "винтажные часы", "б/у айфон"},
		[]string{"подбери увлажнитель до 8000 рублей", "купи молоко"})
	check("CreationRequest", w.CreationRequest,
		[]string{"напиши пост про осень", "подготовь статью о марафоне", "сделай текст для рассылки"},
		[]string{"какую конфигурацию ПК собрать", "напиши маме", "пост про осень"})
	check("DeleteRequest", w.DeleteRequest,
		[]string{"удали цель «Покупка»", "убери этот фильтр", "сотри сегмент"},
		[]string{"добавь цель в Метрике", "покажи цели"})
	check("EditRequest", w.EditRequest,
		[]string{"добавь строку с итогом", "исправь опечатку в заголовке", "поменяй цвет шапки"},
		[]string{"добавь цель в Метрике", "создай новую таблицу с визитами", "сделай таблицу с визитами", "как дела"})
	check("LeaveSkill", w.LeaveSkill,
		[]string{"вернись в обычный режим", "давай не про питание", "выйди из режима"},
		[]string{"режим питания на неделю", "давай про питание"})
	check("PhotoScene", w.PhotoScene,
		[]string{"помести меня на фоне Эйфелевой башни", "сделай меня у Эйфелевой башни", "Нарисуй меня в образе рыцаря",
			"поставь нас на фоне моря", "замени фон на моём фото на горы", "перенеси меня в Париж", "хочу себя в костюме космонавта — сделай"},
		[]string{"опиши фото", "что на этом снимке?", "кто на фото рядом со мной?", "расскажи, что за башня у меня за спиной",
			"Эйфелева башня", "сделай таблицу с расходами", "оцени, как я выгляжу на фоне башни"})
	check("SettingsRequest", w.SettingsRequest,
		[]string{"добавь цель в Метрике", "настрой фильтр для своих визитов", "создай сегмент «мобильные»", "настрой счётчик"},
		[]string{"сколько визитов на сайте за неделю", "покажи посещаемость", "сколько у меня подписчиков в Schai", "доход с рекламы за месяц"})
	check("Markers", w.Marker,
		[]string{"найди письмо от банка", "покажи мою статистику", "а что в календаре"},
		[]string{"3 годика", "второй день, 37,5", "да, болит справа"})
}
