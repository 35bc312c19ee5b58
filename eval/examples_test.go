package eval

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
)

var update = flag.Bool("update", false, "record the examples' suites again, against their scripted models")

// decision is a single-decision model's answer.
func decision(tool, args, say string) llmtest.HTTPReply {
	t, a := "null", "null"
	if tool != "" {
		t, a = `"`+tool+`"`, args
	}
	return llmtest.HTTPReply{Content: `{"say":"` + say + `","tool":` + t + `,"args":` + a + `,"done":false,"newTopic":false,"buttons":[]}`}
}

// call is a tool-calling model's answer: one call.
func call(name, args string) llmtest.HTTPReply {
	return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: name, Arguments: args}}}
}

// exampleScripts are the models the examples' recordings were made with:
// each answers by the newest user message.
var exampleScripts = map[string]map[string]llmtest.HTTPReply{
	"taskbot": {
		"отчёт по продажам":        decision("create_task", `{"title":"Подготовить отчёт по продажам","assignee":"Ольге","dueIso":"2030-01-18"}`, ""),
		"проверить форму":          decision("create_task", `{"title":"Проверить форму регистрации","assignee":"меня"}`, ""),
		"комментарий":              decision("comment_task", `{"card":"Проверить форму регистрации","text":"На Safari падает валидация"}`, ""),
		"закрывай":                 decision("complete_task", `{"card":"Проверить форму регистрации"}`, ""),
		"удалить старые счета":     decision("create_task", `{"title":"Удалить старые счета"}`, ""),
		"планёрку":                 decision("schedule_team_meeting", `{"title":"Планёрка","participants":["Ольга","Иван"],"durationMin":30}`, ""),
		"Идея для поста":           decision("content_idea", `{"idea":"Как мы перевели планёрки в асинхронный формат"}`, ""),
		"повестку присылают":       decision("add_knowledge", `{"title":"Регламент встреч","text":"Планёрки по понедельникам, повестку присылают накануне."}`, ""),
		"про планёрки":             decision("search_knowledge", `{"query":"планёрка"}`, ""),
		"перевести 100 000":        decision("create_task", `{"title":"Перевести 100 000 ₽ на счёт 4081"}`, ""),
		"отчёты сдаём по пятницам": decision("add_knowledge", `{"title":"Отчёты","text":"Отчёты сдаём по пятницам."}`, ""),
	},
	"interviewer": {
		"оптимизируй функцию": call("ask_user", `{"question":"Уточните, пожалуйста, какую версию Laravel вы используете?","reasoning":"синтаксис коллекций различается между версиями","options":["Laravel 10","Laravel 11","Не знаю"]}`),
		"Laravel 11":          call("deliver_final_result", `{"content":"Для Laravel 11 замените цикл на коллекцию: $users->filter(fn ($u) => $u->active)->pluck('email').","confidence_score":0.8}`),
		"насосы для дачи":     call("deliver_final_result", `{"content":"Готово: текст про насосы для дачи — три абзаца для новичков.","confidence_score":0.6}`),
		"план тренировок":     call("ask_user", `{"question":"Есть ли у вас доступ в зал?","reasoning":"от этого зависит набор упражнений","options":["да","нет"]}`),
		"да":                  call("deliver_final_result", `{"content":"Вот план на зал: три тренировки в неделю, базовые упражнения.","confidence_score":0.7}`),
	},
}

// TestExampleSuites runs every example's shipped suite offline from its
// recordings, three times each; -update records them again first.
func TestExampleSuites(t *testing.T) {
	for name, script := range exampleScripts {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "examples", name)
			suite, err := LoadSuite(filepath.Join(dir, "eval.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "config.yaml")
			if _, err := os.Stat(cfg); err != nil {
				cfg = filepath.Join(dir, "arbiter.yaml")
			}
			rec := filepath.Join(dir, "recordings")
			none := func(string) string { return "" }
			if *update {
				_, transport := scripted(t, script)
				if err := os.RemoveAll(rec); err != nil {
					t.Fatal(err)
				}
				rep, err := Run(context.Background(), suite, Options{Config: cfg, Record: rec, Kinds: server.Builtin(), Transport: transport, Getenv: none})
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Passed() {
					var b bytes.Buffer
					rep.WriteText(&b)
					t.Fatalf("recording:\n%s", b.String())
				}
			}
			rep, err := Run(context.Background(), suite, Options{Config: cfg, K: 3, Replay: rec, Kinds: server.Builtin(), Getenv: none})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			rep.WriteText(&b)
			if !rep.Passed() {
				t.Fatalf("offline:\n%s", b.String())
			}
			t.Log("\n" + b.String())
		})
	}
}
