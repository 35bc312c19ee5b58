package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// Model is the fake model a benchmark's engine and baseline call: in this
// process, or in a child process so that its CPU and allocations are not
// counted as the engine's.
type Model interface {
	URL() string
	// LastRequest is the newest first request of a turn the model
	// received: the baseline sends the same bytes.
	LastRequest() (*llmtest.ChatRequest, error)
	Close()
}

// inProcess is the fake model in this process.
type inProcess struct {
	srv  *llmtest.Server
	last atomic.Pointer[llmtest.ChatRequest]
}

func newInProcess(kind ModelKind) *inProcess { return newInProcessWith(kind, 0) }

// newInProcessWith is newInProcess answering each request after latency.
func newInProcessWith(kind ModelKind, latency time.Duration) *inProcess {
	m := &inProcess{}
	m.srv = modelServer(func(r *llmtest.ChatRequest) { m.last.Store(r) }, kind, latency)
	return m
}

func (m *inProcess) URL() string { return m.srv.URL }
func (m *inProcess) LastRequest() (*llmtest.ChatRequest, error) {
	return m.last.Load(), nil
}
func (m *inProcess) Close() { m.srv.Close() }

// ServeModel is the child's side of StartModel: the fake model of kind,
// answering each request after latency, and, on a second address, GET
// /last with its newest first request; it prints "<model URL> <last URL>"
// on out and serves until in ends.
func ServeModel(kind ModelKind, latency time.Duration, in io.Reader, out io.Writer) error {
	switch kind {
	case ModelSingle, ModelLoop, ModelWrite:
	default:
		return fmt.Errorf("unknown fake model %q (single, loop or write)", kind)
	}
	m := newInProcessWith(kind, latency)
	defer m.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	last := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.last.Load())
	})}
	go last.Serve(ln)
	defer last.Close()
	fmt.Fprintf(out, "%s http://%s/last\n", m.URL(), ln.Addr())
	_, err = io.Copy(io.Discard, in) // until the parent closes our stdin
	return err
}

// child is the fake model in a child process.
type child struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	url, last string
}

// StartModel starts the fake model in a child process: exe run with args
// must call ServeModel.
func StartModel(exe string, args ...string) (Model, error) {
	cmd := exec.Command(exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	fields := strings.Fields(line)
	if err != nil || len(fields) != 2 {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("fake model process: %q: %v", line, err)
	}
	return &child{cmd: cmd, stdin: stdin, url: fields[0], last: fields[1]}, nil
}

func (c *child) URL() string { return c.url }

func (c *child) LastRequest() (*llmtest.ChatRequest, error) {
	resp, err := http.Get(c.last)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r *llmtest.ChatRequest
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("the fake model has seen no turn yet")
	}
	return r, nil
}

func (c *child) Close() {
	c.stdin.Close()
	_ = c.cmd.Wait()
}
