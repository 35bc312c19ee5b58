package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/internal/app"
)

// serve runs the HTTP API until ctx ends, then drains in-flight turns.
func serve(ctx context.Context, configPath string, opts app.Options, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	opts.LogOut = stderr
	a, err := app.Build(cfg, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           a.HTTP,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	fmt.Fprintf(stdout, "arbiter listening on http://%s\n", ln.Addr())
	if a.LocalKey != "" {
		fmt.Fprintf(stdout, "local API key: %s\n", a.LocalKey)
		fmt.Fprintf(stdout, "try: curl -s http://%s/v1/messages -H 'Authorization: Bearer %s' -d '{\"conversation_id\":\"c1\",\"text\":\"/tasks\"}'\n", ln.Addr(), a.LocalKey)
	}
	if !a.HasModel {
		fmt.Fprintln(stdout, "no model provider is configured: set OPENAI_API_KEY (optionally OPENAI_BASE_URL, ARBITER_MODEL) or FIREWORKS_API_KEY; slash commands such as /tasks work without one")
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() {
		if err := a.Run(ctx); err != nil {
			errc <- fmt.Errorf("channels: %w", err)
		}
	}()
	if a.Telegram != nil {
		fmt.Fprintln(stdout, "telegram channel started")
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// chatLoop is a terminal chat against the same engine, as the first user
// of the first tenant (or the local user). Buttons are numbered; typing a
// number presses one.
func chatLoop(ctx context.Context, configPath string, opts app.Options, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	a, err := app.Build(cfg, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	if len(a.Keys) == 0 {
		return errors.New("the configuration defines no user with a key")
	}
	id := a.Keys[0].Identity
	conversation := "cli-" + strconv.FormatInt(time.Now().Unix(), 10)
	fmt.Fprintf(stdout, "chatting as %s (%s/%s); empty line or Ctrl-D to quit\n", id.Name, id.TenantID, id.UserID)
	if !a.HasModel {
		fmt.Fprintln(stdout, "(no model provider is configured; /tasks and other commands still work)")
	}
	var buttons []chat.Button
	term := newTerminal(stdin, stdout)
	defer term.close()
	ctx = chat.WithLive(ctx, term)
	for {
		fmt.Fprint(stdout, "> ")
		line, ok := term.readLine()
		if !ok {
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return nil
		}
		in := chat.Inbound{Identity: id, Chat: conversation, Text: line, Channel: "cli"}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(buttons) {
			in.Text, in.Button = "", buttons[n-1].Value
		}
		out, err := a.Engine.HandleTurn(ctx, in)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			continue
		}
		fmt.Fprintln(stdout, out.Say)
		buttons = out.Buttons
		for i, b := range buttons {
			fmt.Fprintf(stdout, "  [%d] %s\n", i+1, b.Label)
		}
	}
}
