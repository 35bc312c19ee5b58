//go:build !race

package agentdojo

const raceEnabled = false
