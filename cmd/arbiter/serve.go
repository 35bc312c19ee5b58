package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/turn"
)

// serve runs the HTTP API and the channels until ctx ends, then drains
// in-flight turns.
func serve(ctx context.Context, configPath string, opts server.Options, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	opts.LogOut = stderr
	a, err := server.Build(cfg, kinds.All(), opts)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.ListenAndServe(ctx, func(addr net.Addr) {
		fmt.Fprintf(stdout, "arbiter listening on http://%s\n", addr)
		if a.LocalKey != "" {
			fmt.Fprintf(stdout, "local API key: %s\n", a.LocalKey)
			fmt.Fprintf(stdout, "try: curl -s http://%s/v1/messages -H 'Authorization: Bearer %s' -d '{\"conversation_id\":\"c1\",\"text\":\"/help\"}'\n", addr, a.LocalKey)
		}
		if !a.HasModel {
			fmt.Fprintln(stdout, noModelNotice(a.ModelSetup))
		}
		if cfg.Channels.Telegram != nil {
			fmt.Fprintln(stdout, "telegram channel started")
		}
	})
}

// chatLoop is a terminal chat against the same engine, as the first user
// of the first tenant (or the local user). Buttons are numbered; typing a
// number presses one.
func chatLoop(ctx context.Context, configPath string, opts server.Options, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	a, err := server.Build(cfg, kinds.All(), withNoPages(opts))
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
		fmt.Fprintf(stdout, "(%s)\n", noModelNotice(a.ModelSetup))
	}
	var buttons []chat.Button
	term := newTerminal(stdin, stdout)
	defer term.close()
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
		in := chat.Inbound{Identity: id, Chat: conversation, Text: line, Channel: "cli", Live: term}
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

// withNoPages marks a process that serves no web pages: the chat loop
// prints no links to a server that is not running.
func withNoPages(o server.Options) server.Options {
	o.NoPages = true
	return o
}

// noModelNotice says at start how to configure a model: the key variables
// of the environment's chain and every model kind of this program.
func noModelNotice(m turn.ModelSetup) string {
	return fmt.Sprintf("no model provider is configured: set one of %s, or add models (kinds: %s) to a configuration; /help and the commands it lists work without one",
		strings.Join(m.Env, ", "), strings.Join(m.Kinds, ", "))
}
