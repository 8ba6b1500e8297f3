package versions

import "errors"

// ErrLost is the error of Get for a version whose definition is not in
// Redis (deleted by hand, or a Redis that lost its data): the runs pinned
// to it cannot go on as they started.
var ErrLost = errors.New("agent version lost")
