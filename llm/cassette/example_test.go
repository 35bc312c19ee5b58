package cassette_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/arbiterhq/arbiter/llm/cassette"
)

// A provider takes an *http.Client in its Config; recording or replaying is
// a matter of the client's transport.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"answer":42}`)
	}))
	dir, err := os.MkdirTemp("", "cassette-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ask := func(client *http.Client) {
		req, _ := http.NewRequest("POST", api.URL+"/v1/chat/completions", strings.NewReader(`{"q":"?"}`))
		req.Header.Set("Authorization", "Bearer sk-example-secret")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(body), resp.Header.Get(cassette.HeaderFile) != "")
	}

	// Record: forward to the network and write each exchange to dir.
	rec, err := cassette.NewRecorder(dir, http.DefaultTransport, "sk-example-secret")
	if err != nil {
		log.Fatal(err)
	}
	ask(&http.Client{Transport: rec})
	api.Close()

	// Replay: answer from dir, with the server gone.
	rp, err := cassette.NewReplayer(dir)
	if err != nil {
		log.Fatal(err)
	}
	ask(&http.Client{Transport: rp})
	fmt.Println("remaining:", rp.Remaining())
	// Output:
	// 200 {"answer":42} false
	// 200 {"answer":42} true
	// remaining: 0
}
