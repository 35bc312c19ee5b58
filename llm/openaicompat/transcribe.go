package openaicompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
)

// Transcriber returns a speech-to-text function on an OpenAI-compatible
// /audio/transcriptions endpoint under baseURL (Whisper and its clones):
// audio of the given MIME type in, its text out. key may be empty for a
// local server. Safe for concurrent use.
func Transcriber(baseURL, model, key string) func(ctx context.Context, audio []byte, mime string) (string, error) {
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
