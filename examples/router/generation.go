package main

import (
	"context"

	"github.com/arbiterhq/arbiter/tool"
)

// generationTools take the text as their prompt while a generation mode
// of the client is on (image, video, music, voice); the image tool also
// takes the photo the user attached («помести меня на фоне Эйфелевой
// башни»).
func generationTools() []func() (tool.Tool, error) {
	out := []func() (tool.Tool, error){
		func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: "generate_image", Title: "Картинка", Description: "Draw an image from a prompt, with the user's photo when they sent one.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in struct {
					Prompt string           `json:"prompt" jsonschema:"what to draw"`
					Photo  *tool.Attachment `json:"photo,omitempty" jsonschema:"the user's photo to draw from"`
				}) (any, error) {
					res := map[string]any{"prompt": in.Prompt, "image": "https://example.org/generated/1.png"}
					if in.Photo != nil {
						res["from_photo"] = in.Photo.Name
					}
					return res, nil
				})
		},
	}
	for _, g := range []struct{ name, title, what string }{
		{"generate_video", "Видео", "a short video"}, {"generate_music", "Музыка", "a piece of music"}, {"generate_voice", "Озвучка", "a voice-over"},
	} {
		out = append(out, func() (tool.Tool, error) {
			return tool.Func(tool.Spec{Name: g.name, Title: g.title, Description: "Make " + g.what + " from a prompt.", Policy: tool.Policy{Risk: tool.RiskRead}},
				func(_ context.Context, _ tool.Call, in struct {
					Prompt string `json:"prompt" jsonschema:"what to make"`
				}) (any, error) {
					return map[string]any{"prompt": in.Prompt, "result": "https://example.org/generated/" + g.name}, nil
				})
		})
	}
	return out
}
