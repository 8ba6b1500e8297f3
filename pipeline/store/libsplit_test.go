package store

import (
	"strings"
	"testing"
)

func TestLibFuncs_splits_lib_lua_into_its_functions(t *testing.T) {
	funcs := libFuncs(libLua)
	if want := strings.Count(libLua, "\nlocal function "); len(funcs) != want {
		t.Fatalf("libFuncs found %d functions, lib.lua has %d", len(funcs), want)
	}
	var joined strings.Builder
	for _, f := range funcs {
		if !strings.HasPrefix(f.src, "-- "+f.name+" ") || !strings.HasSuffix(f.src, "\nend\n") {
			t.Errorf("function %s is not its comment through its end:\n%s", f.name, f.src)
		}
		joined.WriteString(f.src)
	}
	// Nothing of a function is lost: every line of code in lib.lua is in one.
	for line := range strings.Lines(libLua) {
		if !strings.HasPrefix(line, "--") && strings.TrimSpace(line) != "" && !strings.Contains(joined.String(), line) {
			t.Errorf("line %q of lib.lua is in no function", line)
		}
	}
}

func TestLibOf_gives_a_script_the_functions_it_calls_and_theirs(t *testing.T) {
	funcs := libFuncs(libLua)
	has := func(src, name string) bool { return strings.Contains(src, "\nlocal function "+name+"(") }
	for _, c := range []struct {
		script string
		want   []string
		not    []string
	}{
		{"return 1", nil, []string{"compact", "retire", "read_fields", "set_fields"}},
		// retire calls compact, above it; outcome calls inherit.
		{"retire(KEYS[1], '3')\nreturn 1", []string{"compact", "retire"}, []string{"inherit", "read_fields"}},
		{"outcome(KEYS[1], 'd', 'c', 'applied', '')", []string{"inherit", "outcome"}, []string{"retire"}},
		{"local run = read_fields(KEYS[1])\nset_fields(run, {'a', 1})\nreturn fields_reply(run)", []string{"read_fields", "set_fields", "fields_reply"}, []string{"trim_deltas"}},
		// A field or a method of the same name is no call of it.
		{"local t = {}\nt.retire(1)\nt:set_fields(2)\nlocal read_fieldset = 1", nil, []string{"retire", "set_fields", "read_fields"}},
		{"trim_deltas(KEYS[1], KEYS[2], nil, 'message.delta')", []string{"trim_deltas"}, []string{"compact", "emit"}},
	} {
		src := libOf(funcs, c.script)
		for _, name := range c.want {
			if !has(src, name) {
				t.Errorf("libOf(%q) lacks %s", c.script, name)
			}
		}
		for _, name := range c.not {
			if has(src, name) {
				t.Errorf("libOf(%q) has %s, which it does not call", c.script, name)
			}
		}
	}
}
