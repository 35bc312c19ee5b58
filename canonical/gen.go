//go:build ignore

// gen writes table.go from internal/gen (go generate).
package main

import (
	"log"
	"os"

	"github.com/arbiterhq/arbiter/canonical/internal/gen"
)

func main() {
	src, err := gen.Source()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("table.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
