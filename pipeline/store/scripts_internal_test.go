package store

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

var (
	// positionalArg is a read of an argument other than the one JSON
	// argument, or of KEYS by arithmetic.
	positionalArg = regexp.MustCompile(`ARGV\[([2-9]|[1-9][0-9]|[^0-9\]])|#ARGV|KEYS\[[^0-9]|KEYS\[[0-9]+ *[-+]`)
	// statusLiteral is a run or call status or a step state written in a
	// script rather than given by Go (moves.go).
	statusLiteral = regexp.MustCompile(`'(created|running|waiting|done|new|suspended|resuming|succeeded|failed|cancelled|pending|inferring|tools)'`)
)

func TestScripts_take_one_JSON_argument_and_name_no_status(t *testing.T) {
	names, err := fs.Glob(scriptFiles, "scripts/*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("scripts: %v, %v", names, err)
	}
	for _, name := range names {
		base := strings.TrimPrefix(name, "scripts/")
		if base == "lib.lua" {
			if m := statusLiteral.FindString(libLua); m != "" {
				t.Errorf("lib.lua names a status itself: %s", m)
			}
			continue
		}
		src := source(strings.TrimSuffix(base, ".lua"))
		if !strings.Contains(src, "cjson.decode(ARGV[1])") {
			t.Errorf("%s does not decode its one JSON argument", base)
		}
		if m := positionalArg.FindString(src); m != "" {
			t.Errorf("%s reads a positional argument or a key by arithmetic: %s", base, m)
		}
		if m := statusLiteral.FindString(src); m != "" {
			t.Errorf("%s names a status itself: %s", base, m)
		}
	}
}

func TestScripts_each_compiles_behind_the_library(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	names, err := fs.Glob(scriptFiles, "scripts/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		name = strings.TrimSuffix(strings.TrimPrefix(name, "scripts/"), ".lua")
		if err := redis.NewScript(libConsts(0)+libFor()(source(name))+source(name)).Load(t.Context(), rdb).Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMovedFrom_panics_on_a_move_the_table_lacks(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("succeeded → resuming was taken")
		}
	}()
	movedFrom(pipeline.CallResuming, pipeline.CallSuspended, pipeline.CallSucceeded)
}
