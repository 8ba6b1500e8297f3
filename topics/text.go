package topics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// TextError is what CheckText refuses: the problem, and the byte offset
// (from 0) it is at.
type TextError struct {
	Offset  int64
	Problem string
}

func (e *TextError) Error() string { return fmt.Sprintf("%s, at offset %d", e.Problem, e.Offset) }

// CheckText refuses JSON text that readers may take in different ways:
// bytes that are not UTF-8 (encoding/json reads them as U+FFFD, others
// refuse them) and an object with a key twice (encoding/json keeps the last
// value, other readers the first). Keys are compared as decoded, escapes
// and all. Text that does not parse otherwise passes: its decoder says
// where it breaks. The error is a *TextError.
//
// What arrives from outside stepwise goes through it: every HTTP body, and
// the messages other systems publish (Decision).
func CheckText(b []byte) error {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, size := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return &TextError{Offset: int64(off), Problem: fmt.Sprintf("the text is not UTF-8: byte 0x%02x does not start a character", b[off])}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var open []*jsonLevel // the objects and arrays the walk is in
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or text the decoder will blame
		}
		var in *jsonLevel
		if len(open) > 0 {
			in = open[len(open)-1]
		}
		switch {
		case in != nil && in.wantKey && tok != json.Delim('}'):
			k := tok.(string)
			if in.keys[k] {
				rest := b[start:]
				at := start + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n,")))
				return &TextError{Offset: at, Problem: fmt.Sprintf("key %q appears twice in an object (JSON readers disagree on which value counts: send it once)", k)}
			}
			in.keys[k], in.wantKey = true, false
		case tok == json.Delim('{'):
			open = append(open, &jsonLevel{keys: map[string]bool{}, wantKey: true})
		case tok == json.Delim('['):
			open = append(open, &jsonLevel{})
		case tok == json.Delim('}'), tok == json.Delim(']'):
			open = open[:len(open)-1]
			if len(open) > 0 {
				open[len(open)-1].valueRead()
			}
		case in != nil:
			in.valueRead()
		}
	}
}

// jsonLevel is an object (keys not nil) or array that CheckText walks in.
type jsonLevel struct {
	keys    map[string]bool
	wantKey bool // the next token is a key, or the object's end
}

// valueRead notes that a value of the level was read whole: in an object,
// a key comes next.
func (l *jsonLevel) valueRead() { l.wantKey = l.keys != nil }
