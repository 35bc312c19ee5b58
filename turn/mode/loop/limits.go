package loop

import "time"

// Defaults of Limits.
const (
	DefaultModelCalls  = 8
	DefaultToolCalls   = 16
	DefaultDeadline    = 60 * time.Second
	DefaultResultBytes = 16 << 10
	DefaultTotalBytes  = 64 << 10
	DefaultSameCall    = 2
)

// Limits bound one task of a loop assistant (Settings.Limits). Reaching any of them ends the
// task as needs_review, handed to a person with the reason; zero fields
// take the defaults.
type Limits struct {
	ModelCalls int // model calls per task
	ToolCalls  int // tool calls per task, refused ones included
	// Deadline bounds the task's wall-clock time (never beyond the turn's
	// timeout).
	Deadline time.Duration
	// ResultBytes bounds one tool result as the model would see it;
	// TotalBytes all of a task's results together.
	ResultBytes int
	TotalBytes  int
	// SameCall is how many times one call — the same tool with the same
	// canonical arguments — may run in a task.
	SameCall int
}

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.ModelCalls, DefaultModelCalls)
	set(&l.ToolCalls, DefaultToolCalls)
	set(&l.ResultBytes, DefaultResultBytes)
	set(&l.TotalBytes, DefaultTotalBytes)
	set(&l.SameCall, DefaultSameCall)
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	return l
}
