package stop

import "errors"

// ErrInvalid is matched (errors.Is) by every error Compile returns. Each such
// error names the offending field of config.Stop, as in the configuration
// ("content_match: ...").
var ErrInvalid = errors.New("invalid stop condition")
