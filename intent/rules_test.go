package intent

import "testing"

func TestRules(t *testing.T) {
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
	check("Buying", Buying,
		[]string{"подбери увлажнитель до 8000 рублей", "хочу купить велосипед", "нужна куртка на зиму"},
		[]string{"продам велосипед за 5000", "выставь мой курс за 3000", "как дела"})
	check("InfoQuestion", func(s string) bool { ok, _ := InfoQuestion(s); return ok },
		[]string{"где купить запчасти на запорожец", "Где купить увлажнитель", "винтажные часы", "б/у айфон"},
		[]string{"подбери увлажнитель до 8000 рублей", "купи молоко"})
	check("CreationRequest", CreationRequest,
		[]string{"напиши пост про осень", "подготовь статью о марафоне", "сделай текст для рассылки"},
		[]string{"какую конфигурацию ПК собрать", "напиши маме", "пост про осень"})
	check("DeleteRequest", DeleteRequest,
		[]string{"удали цель «Покупка»", "убери этот фильтр", "сотри сегмент"},
		[]string{"добавь цель в Метрике", "покажи цели"})
	check("EditRequest", EditRequest,
		[]string{"добавь строку с итогом", "исправь опечатку в заголовке", "поменяй цвет шапки"},
		[]string{"добавь цель в Метрике", "создай новую таблицу с визитами", "сделай таблицу с визитами", "как дела"})
	check("LeaveSkill", LeaveSkill,
		[]string{"вернись в обычный режим", "давай не про питание", "выйди из режима"},
		[]string{"режим питания на неделю", "давай про питание"})
	check("Markers", func(s string) bool { return Markers.First(s) != "" },
		[]string{"найди письмо от банка", "покажи мою статистику", "а что в календаре"},
		[]string{"3 годика", "второй день, 37,5", "да, болит справа"})
}
