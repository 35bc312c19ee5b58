// Command paysim serves the support example's payments, subscriptions and
// helpdesk simulator (see package sim) until interrupted:
//
//	go run ./examples/support/paysim -listen 127.0.0.1:9100 [-fault refund-timeout-after-commit]…
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/examples/support/sim"
)

// faultFlags collects repeated -fault flags.
type faultFlags []string

func (f *faultFlags) String() string     { return strings.Join(*f, ",") }
func (f *faultFlags) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	listen := flag.String("listen", "127.0.0.1:9100", "address to serve on")
	delay := flag.Duration("delay", 3*time.Second, "how long the timeout faults hold an answer")
	var faults faultFlags
	flag.Var(&faults, "fault", "a fault to show, repeatable: "+strings.Join(sim.Faults, ", "))
	flag.Parse()
	s, err := sim.New(faults...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paysim:", err)
		os.Exit(2)
	}
	s.Delay = *delay
	srv := &http.Server{Addr: *listen, Handler: s, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("paysim on http://%s (faults: %s)", *listen, faults.String())
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "paysim:", err)
		os.Exit(1)
	}
}
