//go:build race

package intent

// raceEnabled: the race detector is on; sync.Pool then drops what it is
// given now and then, so allocation counts do not hold.
const raceEnabled = true
