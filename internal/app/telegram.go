package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/channel/telegram"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/store"
)

// newTelegram builds the Telegram channel on the engine and the store's
// durable channel inbox.
func (a *App) newTelegram(cfg *config.Config, tg *config.Telegram, getenv func(string) string) (*telegram.Channel, error) {
	inbox, ok := a.State.(store.ChannelInbox)
	if !ok {
		return nil, errors.New("telegram: the configured store has no durable channel inbox")
	}
	users := map[int64]chat.Identity{}
	for _, t := range cfg.Tenants {
		if t.ID != tg.Tenant {
			continue
		}
		for _, u := range t.Users {
			scopes := u.ChannelScopes
			if len(scopes) == 0 {
				scopes = []string{"read", "write:safe", "write:full"}
			}
			for _, id := range u.TelegramIDs {
				users[id] = identity(t, u, scopes)
			}
		}
	}
	c := telegram.Config{
		Token:       getenv(tg.TokenEnv),
		APIBaseURL:  tg.APIBaseURL,
		Mode:        tg.Mode,
		SecretToken: getenv(tg.SecretTokenEnv),
		PublicURL:   tg.PublicURL,
		WebhookPath: tg.WebhookPath,
		Handler:     a.Engine,
		Inbox:       inbox,
		Identify: func(id int64) (chat.Identity, bool) {
			who, ok := users[id]
			return who, ok
		},
		Logger: a.Logger,
	}
	if tr := tg.Transcription; tr != nil {
		c.Transcribe = transcriber(tr.BaseURL, tr.Model, getenv(tr.APIKeyEnv))
	}
	return telegram.New(c)
}

// transcriber calls an OpenAI-compatible /audio/transcriptions endpoint.
func transcriber(baseURL, model, key string) func(ctx context.Context, audio []byte, mime string) (string, error) {
	client := &http.Client{Timeout: 60 * time.Second}
	return func(ctx context.Context, audio []byte, mime string) (string, error) {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		_ = w.WriteField("model", model)
		ext := "ogg"
		if strings.Contains(mime, "mpeg") {
			ext = "mp3"
		}
		part, err := w.CreateFormFile("file", "voice."+ext)
		if err != nil {
			return "", err
		}
		if _, err := part.Write(audio); err != nil {
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
		req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(baseURL, "/")+"/audio/transcriptions", &body)
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", w.FormDataContentType())
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("transcription: %w", err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("transcription: HTTP %d", resp.StatusCode)
		}
		var out struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return "", fmt.Errorf("transcription: %w", err)
		}
		return out.Text, nil
	}
}
