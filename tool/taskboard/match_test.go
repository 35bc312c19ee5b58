package taskboard

import (
	"slices"
	"testing"
)

var testMembers = []Member{
	{ID: "u1", Name: "Дмитрий Иванов"},
	{ID: "u2", Name: "Дмитрий Петров"},
	{ID: "u3", Name: "Ольга Смирнова"},
	{ID: "u4", Name: "Алёна Ким"},
	{ID: "u5", Name: "Иван Сидоров"},
}

func memberIDs(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestMatchMembers(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"u3", []string{"u3"}},
		{"U3", []string{"u3"}},
		{"Дмитрий Иванов", []string{"u1"}},
		{"  дмитрий   ИВАНОВ ", []string{"u1"}},
		{"Иванов Дмитрий", []string{"u1"}},
		{"Дмитрий", []string{"u1", "u2"}},
		{"Ольга", []string{"u3"}},
		{"Ольге", []string{"u3"}},
		{"Ольгу", []string{"u3"}},
		{"«Ольга»", []string{"u3"}},
		{"Смирновой", []string{"u3"}},
		{"Дмитрия", []string{"u1", "u2"}},
		{"Дмитрия Иванова", []string{"u1"}},
		{"Дмитрию Петрову", []string{"u2"}},
		{"Алена", []string{"u4"}},
		{"АЛЁНЕ", []string{"u4"}},
		{"Иван", []string{"u5"}},        // exact first name wins over the stem of "Иванов"
		{"Ивану", []string{"u1", "u5"}}, // tolerant stage: both stems fit, so the server asks
		{"Сидорову", []string{"u5"}},
		{"Петя", nil},
		{"Саше", nil},
		{"", nil},
		{"Ольга Иванова", nil}, // words of two different people
	}
	for _, tt := range tests {
		got := memberIDs(matchMembers(testMembers, tt.query))
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("matchMembers(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestMatchColumns(t *testing.T) {
	cols := []string{"Входящие", "В работе", "Готово", "Готово к релизу"}
	tests := []struct {
		query string
		want  []string
	}{
		{"В работе", []string{"В работе"}},
		{"в работе", []string{"В работе"}},
		{"в работу", []string{"В работе"}},
		{"Готово", []string{"Готово"}}, // exact wins over the prefix of "Готово к релизу"
		{"гот", []string{"Готово", "Готово к релизу"}},
		{"вход", []string{"Входящие"}},
		{"Входящих", []string{"Входящие"}},
		{"done", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := matchColumns(cols, tt.query)
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("matchColumns(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestParseCardRef(t *testing.T) {
	tests := []struct {
		in        string
		id        string
		fromURL   bool
		title     string
		bareTitle string
	}{
		{"ab12cd34", "ab12cd34", false, "ab12cd34", ""},
		{"AB12CD34", "ab12cd34", false, "ab12cd34", ""},
		{"#ab12cd34", "ab12cd34", false, "#ab12cd34", ""},
		{"http://127.0.0.1:8080/board/c/ab12cd34", "ab12cd34", true, "", ""},
		{"https://example.org/board/c/AB12CD34/12-check-form?x=1", "ab12cd34", true, "", ""},
		{"посмотри https://trello.com/c/xYz98765 пожалуйста", "xyz98765", true, "", ""},
		{"Проверить форму (ab12cd34)", "ab12cd34", false, "проверить форму (ab12cd34)", "проверить форму"},
		{"«Проверить форму»", "", false, "проверить форму", ""},
		{"Отчёт за Q3", "", false, "отчет за q3", ""},
	}
	for _, tt := range tests {
		got := parseCardRef(tt.in)
		want := cardRef{id: tt.id, fromURL: tt.fromURL, title: tt.title, bareTitle: tt.bareTitle}
		if got != want {
			t.Errorf("parseCardRef(%q) = %+v, want %+v", tt.in, got, want)
		}
	}
}

func TestMatchCardTitles(t *testing.T) {
	cards := []cardKey{
		{ID: "c1", Title: "Проверить форму регистрации", Status: CardOpen},
		{ID: "c2", Title: "Починить форму оплаты", Status: CardOpen},
		{ID: "c3", Title: "Отчёт", Status: CardDone},
		{ID: "c4", Title: "Отчёт за квартал", Status: CardOpen},
		{ID: "c5", Title: "Старая форма", Status: CardDone},
		{ID: "c6", Title: "Созвон", Status: CardOpen},
		{ID: "c7", Title: "созвон", Status: CardDone},
	}
	ids := func(ks []cardKey) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	tests := []struct {
		title string
		want  []string
	}{
		{"проверить форму регистрации", []string{"c1"}},
		{"отчет", []string{"c3"}}, // exact title, even though the card is done
		{"форму", []string{"c1", "c2"}},
		{"форма", nil}, // the only card holding it is done
		{"квартал", []string{"c4"}},
		{"созвон", []string{"c6", "c7"}},
		{"нет такой", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := ids(matchCardTitles(cards, tt.title)); !slices.Equal(got, tt.want) {
			t.Errorf("matchCardTitles(%q) = %v, want %v", tt.title, got, tt.want)
		}
	}
}
