package config

import "errors"

// ErrInvalid is matched (errors.Is) by every problem Parse, Load and Validate
// report: YAML that does not parse, fields of the wrong shape, unknown fields
// and values that fail validation.
var ErrInvalid = errors.New("invalid configuration")

// problem is one mistake in a configuration, at a path such as
// "agents.assistant.tools[1]". Every problem matches ErrInvalid.
type problem struct {
	path string
	msg  string
}

func (p *problem) Error() string {
	if p.path == "" {
		return p.msg
	}
	return p.path + ": " + p.msg
}

// Is makes every problem match ErrInvalid.
func (p *problem) Is(target error) bool { return target == ErrInvalid }

// problems collects mistakes so that a user sees all of them at once.
type problems []error

func (ps *problems) add(path, msg string) {
	*ps = append(*ps, &problem{path: path, msg: msg})
}

// err joins the collected problems, in the order they were found; nil if none.
func (ps problems) err() error { return errors.Join(ps...) }

// field is the path of key under the object at path.
func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
