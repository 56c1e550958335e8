package harness

import "time"

// LimitOf is the deadline r gives c: its budget from r.Recorded, or its
// own Limit.
func LimitOf(r *Runner, c *Case) time.Duration { return r.pace.budgeted(r.Recorded, c).Limit() }
