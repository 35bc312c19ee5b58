package names

import (
	"slices"
	"testing"
)

func TestFold(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Дмитрий Иванов", "дмитрий иванов"},
		{"  дмитрий   ИВАНОВ ", "дмитрий иванов"},
		{"«Ольга»", "ольга"},
		{`"Ревью"`, "ревью"},
		{"АЛЁНА", "алена"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Fold(tt.in); got != tt.want {
			t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStemEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"дмитрий", "дмитрий", true},
		{"дмитрия", "дмитрий", true},
		{"дмитрию", "дмитрий", true},
		{"ольге", "ольга", true},
		{"ольгу", "ольга", true},
		{"смирновой", "смирнова", true},
		{"иванова", "иванов", true},
		{"саше", "саша", false}, // stem "саш" is shorter than minStem
		{"ольге", "олег", false},
		{"петр", "павел", false},
		{"ab", "ab", true},
		{"иванович", "иван", false}, // four letters dropped, not two
	}
	for _, tt := range tests {
		if got := stemEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("stemEqual(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := stemEqual(tt.b, tt.a); got != tt.want {
			t.Errorf("stemEqual(%q, %q) = %v, want %v (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestIsSelf(t *testing.T) {
	for _, q := range []string{"me", "Me", "myself", "я", "меня", "Мне", " себе ", "«мной»"} {
		if !IsSelf(q) {
			t.Errorf("IsSelf(%q) = false, want true", q)
		}
	}
	for _, q := range []string{"", "Дмитрий", "мы", "нам", "i"} {
		if IsSelf(q) {
			t.Errorf("IsSelf(%q) = true, want false", q)
		}
	}
}

func TestFirst(t *testing.T) {
	even := func(n int) bool { return n%2 == 0 }
	big := func(n int) bool { return n > 2 }
	none := func(int) bool { return false }
	tests := []struct {
		name   string
		items  []int
		stages []func(int) bool
		want   []int
	}{
		{"first stage wins", []int{1, 2, 3, 4}, []func(int) bool{even, big}, []int{2, 4}},
		{"falls through empty stages", []int{1, 3, 5}, []func(int) bool{none, even, big}, []int{3, 5}},
		{"nothing matches", []int{1}, []func(int) bool{even, big}, nil},
		{"no stages", []int{1}, nil, nil},
		{"no items", nil, []func(int) bool{even}, nil},
	}
	for _, tt := range tests {
		if got := First(tt.items, tt.stages...); !slices.Equal(got, tt.want) {
			t.Errorf("%s: First = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type person struct {
	id, email, handle string
	names             []string
}

func TestPeople(t *testing.T) {
	people := []person{
		{id: "u1", email: "dima@example.org", handle: "dima", names: []string{"Дмитрий Иванов"}},
		{id: "u2", handle: "dpetrov", names: []string{"Дмитрий Петров"}},
		{id: "u3", names: []string{"Ольга Смирнова"}},
		{id: "u4", names: []string{"Alena Kim", "Алёна Ким"}},
		{id: "u5", names: []string{"Иван Сидоров"}},
		{id: "иван", names: []string{"Иван Грозный"}},
	}
	namesOf := func(p person) []string { return p.names }
	byID := func(p person, q string) bool { return Fold(p.id) == q }
	byEmail := func(p person, q string) bool { return p.email != "" && Fold(p.email) == q }
	tests := []struct {
		query string
		keys  []func(person, string) bool
		want  []string
	}{
		{"u3", []func(person, string) bool{byID}, []string{"u3"}},
		{"U3", []func(person, string) bool{byID}, []string{"u3"}},
		{"u3", nil, nil}, // without keys an id is just words
		{"DIMA@example.org", []func(person, string) bool{byID, byEmail}, []string{"u1"}},
		{"Иван", []func(person, string) bool{byID}, []string{"иван"}}, // a key stage comes before names
		{"Иван", nil, []string{"u5", "иван"}},                         // exact first name beats the stem of "Иванов"
		{"Дмитрий Иванов", nil, []string{"u1"}},
		{"  дмитрий   ИВАНОВ ", nil, []string{"u1"}},
		{"Иванов Дмитрий", nil, []string{"u1"}},
		{"Дмитрий", nil, []string{"u1", "u2"}},
		{"Ольге", nil, []string{"u3"}},
		{"«Ольга»", nil, []string{"u3"}},
		{"Смирновой", nil, []string{"u3"}},
		{"Дмитрию Петрову", nil, []string{"u2"}},
		{"Алене", nil, []string{"u4"}}, // a second name of the same person
		{"alena", nil, []string{"u4"}},
		{"Сидорову", nil, []string{"u5"}},
		{"Ольга Иванова", nil, nil}, // words of two different people
		{"Саше", nil, nil},
		{"", []func(person, string) bool{byID}, nil},
		{"  ", nil, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range People(people, tt.query, namesOf, tt.keys...) {
			got = append(got, p.id)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("People(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestLabels(t *testing.T) {
	cols := []string{"Входящие", "В работе", "Готово", "Готово к релизу", "Ревью"}
	tests := []struct {
		query string
		want  []string
	}{
		{"В работе", []string{"В работе"}},
		{"в работу", []string{"В работе"}},
		{"Готово", []string{"Готово"}}, // exact wins over the prefix of "Готово к релизу"
		{"гот", []string{"Готово", "Готово к релизу"}},
		{"вход", []string{"Входящие"}},
		{"Входящих", []string{"Входящие"}},
		{"«Ревью»", []string{"Ревью"}},
		{"done", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := Labels(cols, tt.query, func(c string) string { return c })
		if !slices.Equal(got, tt.want) {
			t.Errorf("Labels(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}
