package board

import (
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
)

// labels name the actions' arguments for people.
var labels = map[string]tool.Localized{
	"title":       {"ru": "Название", "en": "Title"},
	"assignee":    {"ru": "Исполнитель", "en": "Assignee"},
	"dueIso":      {"ru": "Срок", "en": "Due"},
	"column":      {"ru": "Колонка", "en": "Column"},
	"description": {"ru": "Описание", "en": "Description"},
	"card":        {"ru": "Задача", "en": "Task"},
	"text":        {"ru": "Текст", "en": "Text"},
	"attachment":  {"ru": "Вложение", "en": "Attachment"},
}

// defs declares the five actions with a board's docs. The schemas are the
// same on every board but for the descriptions that name its things.
func defs(d Docs) map[string]action.Def {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return map[string]action.Def{
		ActionCreate: {
			Title:       "Создать задачу",
			Titles:      tool.Localized{"ru": "Создать задачу", "en": "Create a task"},
			Doing:       tool.Localized{"ru": "Создание задачи", "en": "Creating the task"},
			Labels:      labels,
			Description: d.Create,
			Risk:        tool.RiskWriteSafe,
			Schema: fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": %d, "description": "Card title"},
    "assignee": {"type": ["string", "null"], "maxLength": %d, "description": %s},
    "dueIso": {"type": ["string", "null"], "maxLength": %d, "description": "Due date YYYY-MM-DD or RFC 3339 time; null for none"},
    "column": {"type": ["string", "null"], "maxLength": %d, "description": %s},
    "description": {"type": ["string", "null"], "maxLength": %d, "description": "Card description"},
    "attachment": %s
  },
  "required": ["title"],
  "additionalProperties": false
}`, MaxTitle, MaxName, q(d.Assignee), MaxDue, MaxName, q(d.Column), MaxDescription, tool.AttachmentSchema),
		},
		ActionUpdate: {
			Title:       "Изменить задачу",
			Titles:      tool.Localized{"ru": "Изменить задачу", "en": "Change a task"},
			Doing:       tool.Localized{"ru": "Изменение задачи", "en": "Changing the task"},
			Labels:      labels,
			Description: d.Update,
			Risk:        tool.RiskWriteSafe,
			Schema: fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": %d, "description": %s},
    "title": {"type": ["string", "null"], "maxLength": %d, "description": "New title"},
    "assignee": {"type": ["string", "null"], "maxLength": %d, "description": %s},
    "dueIso": {"type": ["string", "null"], "maxLength": %d, "description": "New due date YYYY-MM-DD or RFC 3339 time"},
    "column": {"type": ["string", "null"], "maxLength": %d, "description": %s},
    "description": {"type": ["string", "null"], "maxLength": %d, "description": "New description"}
  },
  "required": ["card"],
  "additionalProperties": false
}`, MaxCardRef, q(d.Card), MaxTitle, MaxName, q(d.NewAssignee), MaxDue, MaxName, q(d.NewColumn), MaxDescription),
		},
		ActionComment: {
			Title:       "Прокомментировать задачу",
			Titles:      tool.Localized{"ru": "Прокомментировать задачу", "en": "Comment on a task"},
			Doing:       tool.Localized{"ru": "Комментирование задачи", "en": "Commenting on the task"},
			Labels:      labels,
			Description: d.Comment,
			Risk:        tool.RiskWriteSafe,
			Schema: fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": %d, "description": %s},
    "text": {"type": "string", "minLength": 1, "maxLength": %d, "description": "Comment text"}
  },
  "required": ["card", "text"],
  "additionalProperties": false
}`, MaxCardRef, q(d.Card), MaxComment),
		},
		ActionComplete: {
			Title:       "Завершить задачу",
			Titles:      tool.Localized{"ru": "Завершить задачу", "en": "Complete a task"},
			Doing:       tool.Localized{"ru": "Завершение задачи", "en": "Completing the task"},
			Labels:      labels,
			Description: d.Complete,
			Risk:        tool.RiskWriteSafe,
			Schema: fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": %d, "description": %s}
  },
  "required": ["card"],
  "additionalProperties": false
}`, MaxCardRef, q(d.Card)),
		},
		ActionListMine: {
			Title:       "Мои задачи",
			Titles:      tool.Localized{"ru": "Мои задачи", "en": "My tasks"},
			Labels:      labels,
			Description: d.ListMine,
			Risk:        tool.RiskRead,
			Schema:      `{"type": "object", "properties": {}, "additionalProperties": false}`,
			MaxResult:   32 << 10,
		},
	}
}
