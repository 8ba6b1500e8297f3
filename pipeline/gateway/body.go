package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/topics"
)

// Media types of request bodies.
const (
	mediaJSON   = "application/json"
	mediaNDJSON = "application/x-ndjson"
	mediaJSONL  = "application/jsonl"
	mediaJSONL2 = "application/x-jsonlines"
)

// mediaType returns the request's media type, or a 415 when it is not one
// of accepted (application/*+json counts as JSON). A body without a
// Content-Type, or with one a browser may send to another origin without
// asking first (text/plain, a form), is refused too: reading those as JSON
// would let any web page change state through a visitor's browser.
func mediaType(r *http.Request, accepted ...string) (string, *apiError) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			fmt.Sprintf("no Content-Type: send the body as %s", strings.Join(accepted, " or ")))
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q does not parse: %v", ct, err))
	}
	for _, a := range accepted {
		if mt == a {
			return mt, nil
		}
	}
	if strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") {
		return mediaJSON, nil
	}
	return "", apiErr(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		fmt.Sprintf("Content-Type %q is not accepted here, send %s", mt, strings.Join(accepted, " or ")))
}

// answerTimeout is how long the answer to a stalled body may take to
// write. The server's write deadline runs from the end of the headers, as
// its read deadline does from their start: with the two equal (the
// defaults) it would pass before the 408 is written.
const answerTimeout = 5 * time.Second

// readBody reads the whole body, at most max bytes; a larger one is a 413,
// one that stalls past the server's read deadline a 408. The body is JSON
// text (or JSON Lines): it is refused with 400 unless it reads one way
// only (jsonText).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, apiErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
				fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit))
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerTimeout))
			return nil, apiErr(http.StatusRequestTimeout, CodeRequestTimeout,
				"the request body stalled: it did not arrive within the gateway's read timeout (gateway.read_timeout)")
		}
		return nil, invalid("read request body: %v", err)
	}
	if ae := jsonText(body); ae != nil {
		return nil, ae
	}
	return body, nil
}

// jsonText refuses what topics.CheckText refuses (bytes that are not
// UTF-8, a key twice in an object), saying where.
func jsonText(body []byte) *apiError {
	var te *topics.TextError
	if err := topics.CheckText(body); errors.As(err, &te) {
		return invalid("%s%s", te.Problem, position(body, te.Offset+1))
	}
	return nil
}

// jsonBody reads a JSON body of at most max bytes: the media type checked
// (mediaType), then the body (readBody).
func jsonBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *apiError) {
	if _, ae := mediaType(r, mediaJSON); ae != nil {
		return nil, ae
	}
	return readBody(w, r, max)
}

// strictBody reads a JSON body of at most MaxBodyBytes into v, refusing
// unknown fields (decodeStrict); on a bad one it answers, saying it is an
// invalid what, and returns false.
func (s *Server) strictBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	return s.decodeBody(w, r, v, what, false)
}

// optionalBody reads an optional JSON body into v as strictBody does; a
// request with no body (with or without a Content-Type) leaves v as it is.
func (s *Server) optionalBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	return bodyless(r) || s.decodeBody(w, r, v, what, true)
}

// decodeBody is strictBody; with emptyOK an empty body leaves v as it is.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, what string, emptyOK bool) bool {
	body, ae := jsonBody(w, r, s.cfg.MaxBodyBytes)
	if ae == nil && (!emptyOK || firstByte(body) != 0) {
		if err := decodeStrict(body, v, false); err != nil {
			ae = invalid("invalid %s: %v", what, err)
		}
	}
	if ae != nil {
		writeError(w, ae)
		return false
	}
	return true
}

// bodyless reports whether r comes with no body and no Content-Type, as a
// request whose body is optional may.
func bodyless(r *http.Request) bool {
	return r.ContentLength == 0 && r.Header.Get("Content-Type") == ""
}

// jsonProblem says where and what is wrong with data, a JSON document that
// failed to decode with err. With data nil (a value nested in a larger
// document, whose offsets would mislead) it says only what.
func jsonProblem(err error, data []byte) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON%s: %s", position(data, syn.Offset), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		where := "the value"
		if typ.Field != "" {
			where = fmt.Sprintf("field %q", typ.Field)
		}
		return fmt.Sprintf("%s%s is a JSON %s, want %s", position(data, typ.Offset), where, typ.Value, goTypeName(typ.Type.String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the document ends early"
	default:
		return strings.TrimPrefix(err.Error(), "json: ")
	}
}

// position names the byte encoding/json blamed, " at offset N", with line
// and column when data has several lines; its errors carry the count of
// bytes read up to and including it. Nil data gives "".
func position(data []byte, read int64) string {
	if data == nil {
		return ""
	}
	off := int(max(read-1, 0))
	off = min(off, len(data))
	if bytes.IndexByte(data, '\n') < 0 {
		return fmt.Sprintf(" at offset %d", off)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf(" at offset %d (line %d, column %d)", off, line, col)
}

// goTypeName turns a Go type into what a JSON user would call it.
func goTypeName(t string) string {
	switch {
	case t == "string" || strings.HasSuffix(t, ".Role"):
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map[") || strings.Contains(t, "."):
		return "an object"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "a boolean"
	}
	return t
}

// decodeStrict decodes exactly one JSON value from data into v, refusing
// unknown object fields and trailing data. The error says what, and where
// unless nested (data is part of a larger document).
func decodeStrict(data []byte, v any, nested bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document, want a JSON value")
		}
		where := data
		if nested {
			where = nil
		}
		return errors.New(jsonProblem(err, where))
	}
	if off, trailing := trailingData(data, dec.InputOffset()); trailing {
		return fmt.Errorf("unexpected data after the JSON value%s", position(data, off+1))
	}
	return nil
}

// trailingData reports whether data holds more than white space from end
// on, and the offset where it starts.
func trailingData(data []byte, end int64) (int64, bool) {
	rest := bytes.TrimLeft(data[end:], " \t\r\n")
	return int64(len(data) - len(rest)), len(rest) > 0
}

// jsonKind names the kind of the JSON value that starts raw.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || bytes.Equal(b, []byte("null"))
}

// firstByte is the first non-space byte of b, or 0.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
