package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbiterhq/arbiter/eval"
	"github.com/arbiterhq/arbiter/eval/evaltest"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

var updateRecordings = flag.Bool("update-recordings", false, "record eval.yaml's recordings again, against the scripted model")

// routed is what the scripted model does with a message: the router's
// answer (its calls, a text, or a failure) and the answer's words.
type routed struct {
	route  llmtest.HTTPReply
	answer string
}

func calls(name, args string) llmtest.HTTPReply {
	return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: name, Arguments: args}}}
}

var evalScript = map[string]routed{
	"Где купить увлажнитель":   {calls("product_search", `{"query":"увлажнитель"}`), "Увлажнители продаются в магазинах техники и на маркетплейсах; подсказать модель под ваш бюджет?"},
	"Подбери увлажнитель":      {calls("product_search", `{"query":"увлажнитель до 8000 рублей"}`), "Нашёл два подходящих: Aqua 300 за 5990 ₽ и Breeze Mini за 7490 ₽."},
	"Посчитай калории":         {calls("use_skill", `{"skill":"kbju"}`), "Тарелка борща ~300 г: примерно 150 ккал, белки 7 г, жиры 6 г, углеводы 16 г."},
	"курс доллара":             {llmtest.HTTPReply{Content: "no tool"}, "По данным поиска курс доллара сегодня около 92 ₽."},
	"сделай excel с расходами": {llmtest.HTTPReply{Content: "no tool"}, "Какую таблицу сделать: какие столбцы нужны?"},
	"привет": {llmtest.HTTPReply{Status: 500, ErrorMessage: "scripted failure"}, "Привет! Чем помочь?"},
	"запчасти на запорожец": {calls("product_search", `{"query":"запчасти запорожец"}`),
		"Запчасти к «Запорожцу» ищите на авторазборках и в клубах владельцев; новые почти не выпускают."},
	"какую конфигурацию ПК": {calls("create_post_draft", `{"topic":"конфигурация ПК"}`),
		"Для игр в 1440p: Ryzen 7 7700, RTX 4070 Super, 32 ГБ DDR5, SSD 1 ТБ, блок 750 Вт."},
	"напиши пост про сборку ПК": {calls("create_post_draft", `{"topic":"сборка ПК для игр"}`), "Черновик поста готов — посмотрите и опубликуйте, если всё так."},
	"Подбери мне наушники":      {calls("create_sell_card", `{"title":"Наушники","price":5000}`), "Какие наушники ищете: накладные или вкладыши, и какой бюджет?"},
	"выставь мой курс по Excel": {calls("create_sell_card", `{"title":"Курс по Excel","price":3000}`), "Черновик карточки готов: «Курс по Excel» за 3000 ₽ — проверьте и опубликуйте."},
	"у ребёнка болит живот":     {calls("use_skill", `{"skill":"health"}`), "Сочувствую. Сколько лет ребёнку?"},
	"3 годика":          {llmtest.HTTPReply{Content: "no tool"}, "Как давно болит и есть ли температура?"},
	"второй день, 37,5": {llmtest.HTTPReply{Content: "no tool"}, "При температуре 37,5 на второй день стоит показать ребёнка педиатру. Болит вокруг пупка или справа?"},
	"Добавь цель в Метрике": {calls("edit_document", `{"document":"Трафик.xlsx","change":"цель «Покупка»"}`),
		"Цели в Метрике настраиваются в самом счётчике; в открытую таблицу я ничего не записал."},
	"покажи цели в Метрике":     {calls("delete_metrika_goal", `{"goal":"Покупка"}`), "Вот ваши цели: «Покупка», «Регистрация»."},
	"удали цель Покупка":        {calls("delete_metrika_goal", `{"goal":"Покупка"}`), "Удаляю."},
	"а почему в интернет полез": {llmtest.HTTPReply{Content: "no tool"}, "Вы спросили про курс — это меняется каждый день, поэтому я посмотрел в поиске. Больше не буду без нужды."},
	// The drafts: the router's call, then only buttons.
	"напиши пост про осенний марафон": {calls("create_post_draft", `{"topic":"осенний марафон"}`), ""},
	"сделай его для новичков":         {calls("create_post_draft", `{"topic":"осенний марафон для новичков"}`), ""},
	"выставь мою гитару":              {calls("create_sell_card", `{"title":"Гитара Yamaha","price":12000}`), ""},
	// A question about the photo is not a picture to draw.
	"опиши это фото": {llmtest.HTTPReply{Content: "no tool"}, "На фото человек в синей куртке на фоне парка."},
	// The four tools that show numbers, and their confusions.
	"подписчиков в Schai":         {calls("page_stats", `{"period":"week"}`), "В Schai у вас 1240 подписчиков, за неделю +37."},
	"визитов на сайте":            {calls("site_visits", `{"period":"week"}`), "За неделю на сайте 5320 визитов, больше всего из поиска."},
	"заработал на рекламе":        {calls("ad_revenue", `{"period":"month"}`), "Реклама за месяц принесла 18 450 ₽."},
	"Добавь цель «Покупка»":       {calls("counter_settings", `{"setting":"goal","name":"Покупка"}`), "Добавил в счётчик цель «Покупка»."},
	"покажи посещаемость сайта":   {calls("counter_settings", `{"setting":"goal","name":"Визиты"}`), "За неделю на сайте 5320 визитов."},
	"Расскажи про мою статистику": {llmtest.HTTPReply{Content: "no tool"}, "Какую статистику показать: посещаемость сайта или подписчиков вашей страницы в Schai?"},
}

// scriptedRouter answers the router's request and the answer's, told apart
// by the answer's one tool, by the newest user message a key matches (the
// answer's newest may be a tool's result).
func scriptedRouter(r *llmtest.ChatRequest) llmtest.HTTPReply {
	var key string
	for i := len(r.Messages) - 1; i >= 0 && key == ""; i-- {
		if r.Messages[i].Role == "user" {
			key = evaltest.Pick(evalScript, r.Messages[i].Content)
		}
	}
	step, ok := evalScript[key]
	for _, t := range r.Tools {
		if t.Function.Name == "respond" {
			words := step.answer
			if !ok {
				words = "Не понял."
			}
			args, _ := json.Marshal(map[string]string{"text": words})
			return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "respond", Arguments: string(args)}}}
		}
	}
	if !ok {
		return llmtest.HTTPReply{Content: "no tool"}
	}
	return step.route
}

// The router's eval suite passes offline three times in a row with this
// program's tools; -update-recordings records it again first.
func TestEvalSuite(t *testing.T) {
	suite, err := eval.LoadSuite("eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	if *updateRecordings {
		_, transport := evaltest.FakeModel(t, scriptedRouter)
		if err := os.RemoveAll("recordings"); err != nil {
			t.Fatal(err)
		}
		rep, err := eval.Run(context.Background(), suite, eval.Options{Config: "arbiter.yaml", Record: "recordings", Kinds: kinds(), Transport: transport, Getenv: none})
		evaltest.MustPass(t, "recording", rep, err)
	}
	rep, err := eval.Run(context.Background(), suite, eval.Options{Config: "arbiter.yaml", K: 3, Replay: filepath.Join("recordings"), Kinds: kinds(), Getenv: none})
	t.Log("\n" + evaltest.MustPass(t, "offline", rep, err))
}
