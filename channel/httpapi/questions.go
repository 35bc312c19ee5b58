package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/channel/internal/questions"
	"github.com/arbiterhq/arbiter/chat"
)

// maxAnswerText bounds a typed answer.
const maxAnswerText = 4000

// httpLive is the chat.Live of a turn run by POST /v1/messages. The reply
// is one response, so progress is left to the turn record; questions are
// listed by GET /v1/questions and answered by POST /v1/questions/{id},
// which the client calls while its message request is still open.
type httpLive struct {
	board        *questions.Board
	owner        string
	conversation string
}

func (l httpLive) Progress(chat.Progress) {}

func (l httpLive) Ask(ctx context.Context, q chat.Question) (chat.Answer, error) {
	return l.board.Ask(ctx, l.owner, l.conversation, q, func(string) error { return nil })
}

// questionOwner: a question belongs to the user, across the user's keys
// and conversations.
func questionOwner(id chat.Identity) string { return id.TenantID + "\x00" + id.UserID }

type questionList struct {
	Questions []questions.Open `json:"questions"`
}

func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	conv := r.URL.Query().Get("conversation_id")
	open := []questions.Open{}
	for _, o := range s.questions.List(questionOwner(id), id.Scopes) {
		if conv == "" || o.Conversation == conv {
			open = append(open, o)
		}
	}
	writeJSON(w, http.StatusOK, questionList{Questions: open})
}

func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	a, err := decodeAnswer(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		s.writeBodyError(w, err)
		return
	}
	qid := r.PathValue("id")
	switch err := s.questions.Answer(qid, questionOwner(id), id.Scopes, a); {
	case errors.Is(err, questions.ErrUnknown), errors.Is(err, questions.ErrNotYours):
		// Another user's question, or one this key may not answer, reads
		// as unknown: ids reveal nothing.
		writeError(w, http.StatusNotFound, "not_found", "no open question "+qid)
	case errors.Is(err, questions.ErrInvalid):
		writeError(w, http.StatusBadRequest, "bad_request", "not an answer this question accepts: name one of its choices, or send text where it takes text")
	case err != nil:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]bool{"answered": true})
	}
}

// decodeAnswer reads {"choice": "..."} or {"text": "..."}, strictly.
func decodeAnswer(body io.Reader) (chat.Answer, error) {
	var a chat.Answer
	if err := decodeStrict(body, &a); err != nil {
		return a, err
	}
	a.Text = strings.TrimSpace(a.Text)
	switch {
	case (a.Choice == "") == (a.Text == ""):
		return a, errors.New("give exactly one of choice and text")
	case !utf8.ValidString(a.Text) || len(a.Text) > maxAnswerText:
		return a, fmt.Errorf("text must be valid UTF-8 of at most %d bytes", maxAnswerText)
	}
	return a, nil
}
