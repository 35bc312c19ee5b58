package trello

import (
	"slices"
	"strings"
	"testing"
)

func TestMatchMembers(t *testing.T) {
	people := []boardPerson{
		{member: apiMember{ID: "m1", FullName: "Дмитрий Иванов", Username: "dima"}, names: []string{"Дмитрий Иванов"}},
		{member: apiMember{ID: "m2", FullName: "Дмитрий Петров", Username: "dpetrov"}, names: []string{"Дмитрий Петров"}},
		{member: apiMember{ID: "m3", FullName: "Ольга Смирнова", Username: "olga"}, names: []string{"Ольга Смирнова"}},
		{member: apiMember{ID: "m4", FullName: "Alena Kim", Username: "alenakim"}, names: []string{"Alena Kim", "Алёна Ким"}},
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"m3", []string{"m3"}},
		{"@dima", []string{"m1"}},
		{"DPetrov", []string{"m2"}},
		{"Дмитрий Иванов", []string{"m1"}},
		{"дмитрий", []string{"m1", "m2"}},
		{"Дмитрию Петрову", []string{"m2"}},
		{"Ольге", []string{"m3"}},
		{"Смирновой", []string{"m3"}},
		{"Алене", []string{"m4"}},
		{"alena", []string{"m4"}},
		{"Павел", nil},
		{"Пётр", []string{"m2"}}, // "петр" is a stem of "петров": the shared rules allow it
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range matchMembers(people, tt.query) {
			got = append(got, p.member.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("matchMembers(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestMatchLists(t *testing.T) {
	lists := []apiList{{ID: "a", Name: "Входящие"}, {ID: "b", Name: "В работе"}, {ID: "c", Name: "Ревью"}, {ID: "d", Name: "Готово"}, {ID: "e", Name: "Готово к релизу"}}
	tests := []struct {
		query string
		want  []string
	}{
		{"готово", []string{"d"}},
		{"гот", []string{"d", "e"}},
		{"в работу", []string{"b"}},
		{"«Ревью»", []string{"c"}},
		{"архив", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, l := range matchLists(lists, tt.query) {
			got = append(got, l.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("matchLists(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestMarkers(t *testing.T) {
	desc := withMarker("Сделать форму", "pending:p1")
	if desc != "Сделать форму\n\n—\narbiter:pending:p1" {
		t.Fatalf("withMarker = %q", desc)
	}
	if !hasMarker(desc, "pending:p1") || hasMarker(desc, "pending:p2") || hasMarker(desc, "") {
		t.Error("hasMarker matches the wrong keys")
	}
	if got := stripMarker(desc); got != "Сделать форму" {
		t.Errorf("stripMarker = %q", got)
	}
	if got := markerBlock(desc); got != "\n\n—\narbiter:pending:p1" {
		t.Errorf("markerBlock = %q", got)
	}
	if got := withMarker("", "k1"); got != "—\narbiter:k1" || !hasMarker(got, "k1") || stripMarker(got) != "" {
		t.Errorf("marker on empty text = %q", got)
	}
	if withMarker("text", "") != "text" || markerBlock("text") != "" || stripMarker("a — b") != "a — b" {
		t.Error("text without a key or marker changed")
	}
	// Trailing white space added by an editor still matches.
	if !hasMarker(desc+" \n", "pending:p1") {
		t.Error("marker with trailing space not found")
	}
	// A key with spaces or newlines travels as a digest.
	odd := "turn 7\nstep 2"
	m := withMarker("x", odd)
	if strings.Contains(m, "turn 7") || !hasMarker(m, odd) || hasMarker(m, "turn 7 step 2") {
		t.Errorf("odd key marker = %q", m)
	}
}
