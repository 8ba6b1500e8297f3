package store

import (
	"regexp"
	"strings"
	"sync"
)

// A script that starts with lib.lua makes a closure of each of its
// functions on every call, and Redis's Lua collects them afterwards
// (scripts.go has what that costs a step). So a script gets only the
// functions it calls, and those they call, in the library's order.

// libFunc is one function of lib.lua: its name, its source with the
// comment above it, and what a call of it looks like.
type libFunc struct {
	name, src string
	call      *regexp.Regexp
}

// libFuncs splits lib.lua into its top-level functions, each from the
// comment block above its `local function` line to the `end` that closes
// it at the line's start. What lies outside them (the file's own comment)
// is left out.
func libFuncs(lib string) []libFunc {
	var funcs []libFunc
	var comment, body []string
	name := ""
	for line := range strings.Lines(lib) {
		switch {
		case name != "":
			body = append(body, line)
			if strings.TrimRight(line, "\n") == "end" {
				// A call: the name as a whole word, not a field, then "(".
				call := regexp.MustCompile(`(^|[^\w.:])` + regexp.QuoteMeta(name) + `\s*\(`)
				funcs = append(funcs, libFunc{name: name, src: strings.Join(body, ""), call: call})
				name, body = "", nil
			}
		case strings.HasPrefix(line, "local function "):
			name, _, _ = strings.Cut(strings.TrimPrefix(line, "local function "), "(")
			body = append(comment, line)
			comment = nil
		case strings.HasPrefix(line, "--"):
			comment = append(comment, line)
		default:
			comment = nil
		}
	}
	return funcs
}

// libOf gives the functions of funcs that script calls, directly or
// through another of them, in the library's order (a function calls only
// those above it: a local is not seen before its line), as one source.
func libOf(funcs []libFunc, script string) string {
	need := make([]bool, len(funcs))
	for todo := []string{script}; len(todo) > 0; todo = todo[1:] {
		for i, f := range funcs {
			if !need[i] && f.call.MatchString(todo[0]) {
				need[i] = true
				todo = append(todo, f.src)
			}
		}
	}
	var b strings.Builder
	for i, f := range funcs {
		if need[i] {
			b.WriteString(f.src)
		}
	}
	return b.String()
}

// libFor gives, for each script source, what it needs of lib.lua (libOf):
// found once, for every store the process makes.
var libFor = sync.OnceValue(func() func(script string) string {
	funcs := libFuncs(libLua)
	var mu sync.Mutex
	found := map[string]string{}
	return func(script string) string {
		mu.Lock()
		defer mu.Unlock()
		lib, ok := found[script]
		if !ok {
			lib = libOf(funcs, script)
			found[script] = lib
		}
		return lib
	}
})
