package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// parseView reads a view's JSON (viewWire: an object whose members are
// arrays of strings, or, for "calls", an array of them) the way
// json.Unmarshal would, for a fraction of the allocations: a view is read
// on every step's fan-in, and json.Unmarshal grows each of its slices an
// element at a time and copies every string. Here the strings that hold no
// escape are slices of one copy of the input, and every array is a slice
// of one backing array sized by a first pass. Anything but the shape of a
// view is an error (the caller then reads the step from Redis).
func parseView(raw []byte) (viewWire, error) {
	p := viewParser{b: raw, s: string(raw)}
	p.all = make([]string, 0, p.strings())
	var w viewWire
	if err := p.object(&w); err != nil {
		return viewWire{}, fmt.Errorf("view at byte %d: %w", p.i, err)
	}
	return w, nil
}

type viewParser struct {
	b   []byte
	s   string   // b as a string: the unescaped strings are its slices
	i   int      // the next byte to read
	all []string // the backing array of every array read
}

var errViewShape = errors.New("not a view")

// strings counts the JSON strings in b: its unescaped quotes, halved (a
// quote inside a string is escaped).
func (p *viewParser) strings() int {
	n := 0
	for i := 0; i < len(p.b); i++ {
		switch p.b[i] {
		case '\\':
			i++
		case '"':
			n++
		}
	}
	return n / 2
}

func (p *viewParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips space and reports whether the next byte is c, taking it if so.
func (p *viewParser) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *viewParser) object(w *viewWire) error {
	if !p.next('{') {
		return errViewShape
	}
	if p.next('}') {
		return p.end()
	}
	for {
		key, err := p.str()
		if err != nil {
			return err
		}
		if !p.next(':') {
			return errViewShape
		}
		switch key {
		case "run":
			w.Run, err = p.strs()
		case "ids":
			w.IDs, err = p.strs()
		case "calls":
			w.Calls, err = p.lists()
		default:
			err = fmt.Errorf("%w: member %q", errViewShape, key)
		}
		if err != nil {
			return err
		}
		if p.next('}') {
			return p.end()
		}
		if !p.next(',') {
			return errViewShape
		}
	}
}

func (p *viewParser) end() error {
	if p.space(); p.i != len(p.b) {
		return errViewShape
	}
	return nil
}

// str reads a JSON string. One with an escape or invalid UTF-8 is decoded
// by encoding/json, which checks the escape and replaces what is not UTF-8.
func (p *viewParser) str() (string, error) {
	if !p.next('"') {
		return "", errViewShape
	}
	start, escaped, high := p.i, false, false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			if !escaped && (!high || utf8.ValidString(p.s[start:p.i-1])) {
				return p.s[start : p.i-1], nil
			}
			var out string
			err := json.Unmarshal(p.b[start-1:p.i], &out)
			return out, err
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", fmt.Errorf("%w: a control character in a string", errViewShape)
		default:
			high = high || c >= utf8.RuneSelf
			p.i++
		}
	}
	return "", fmt.Errorf("%w: a string does not end", errViewShape)
}

// strs reads an array of strings (null: nil).
func (p *viewParser) strs() ([]string, error) {
	if p.null() {
		return nil, nil
	}
	if !p.next('[') {
		return nil, errViewShape
	}
	from := len(p.all)
	if !p.next(']') {
		for {
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			p.all = append(p.all, s)
			if p.next(']') {
				break
			}
			if !p.next(',') {
				return nil, errViewShape
			}
		}
	}
	return p.all[from:len(p.all):len(p.all)], nil
}

// lists reads an array of arrays of strings (null: nil).
func (p *viewParser) lists() ([][]string, error) {
	if p.null() {
		return nil, nil
	}
	if !p.next('[') {
		return nil, errViewShape
	}
	out := [][]string{}
	if p.next(']') {
		return out, nil
	}
	for {
		l, err := p.strs()
		if err != nil {
			return nil, err
		}
		out = append(out, l)
		if p.next(']') {
			return out, nil
		}
		if !p.next(',') {
			return nil, errViewShape
		}
	}
}

func (p *viewParser) null() bool {
	p.space()
	if len(p.b)-p.i >= 4 && p.s[p.i:p.i+4] == "null" {
		p.i += 4
		return true
	}
	return false
}
