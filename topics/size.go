package topics

import "errors"

// ErrTooLarge marks a publish refused because a record is over the
// broker's message size limit (kafka.max_message_bytes). It is permanent:
// the same record is refused every time, so a caller that gets it changes
// what it publishes (a run result leaves its metadata out) or gives up (a
// run ends with an error) instead of trying again. ADR 0050.
var ErrTooLarge = errors.New("record over the broker's message size limit")
