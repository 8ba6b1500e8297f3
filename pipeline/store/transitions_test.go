package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The tests in transitions_test.go and transitions_explore_test.go keep one
// truth for status transitions: pipeline's tables (RunStatus.CanTransition,
// ToolCallStatus.CanTransition). The Lua scripts write the statuses, so
// three checks tie every such write to the tables, each able to fail on its
// own:
//
//  1. Static (TestTransitions_every_status_write_of_every_script_is_declared):
//     scanStatusWrites reads every script in scripts/ and names each command
//     that may write a run's or a call's status: an HSET (HMSET, HSETNX,
//     HINCRBY, HDEL) of the field 'status'; one whose field names are not
//     all literals (unpack(fields), ARGV[i]: the field may be status); a
//     command that drops, moves or expires a whole key (DEL, RENAME,
//     EXPIRE…); a redis.call whose command is not a literal. Those sites
//     must be exactly the ones statusWrites declares for the script. A new
//     script, or a new write in an old one, fails here until it is
//     declared, and the declaration says which moves the script makes.
//  2. Pure (TestTransitions_declared_moves_are_allowed_by_the_domain_tables):
//     every move statusWrites declares is allowed by the tables. A record is
//     created created (a run) or new, or in a status ToolGate moves a new
//     call to without running it (a call).
//  3. Behavioural (TestTransitions_redis, TestTransitions_miniredis): explore
//     starts from an empty store and drives every store operation that runs
//     a script, in its variants, from every state it reaches that way,
//     breadth first, forking each state into keys of its own so that every
//     operation starts from the same state. Every reachable pair of run
//     status × call status is a start state. For each operation it compares
//     the run and its calls before and after, through the statuses the
//     run's event log records in between (decision.applied {status:
//     resuming}, then tool_call.finished {status: succeeded}, is two moves).
//     Every move must be allowed by the tables and declared for the script
//     the operation runs; the log must end at the stored status (no status
//     change without its event); a refusal must be one of the store's
//     sentinels (a script that crashes is no refusal); and every declared
//     move must be made from some state, so a declaration can neither claim
//     moves no script makes nor cover moves the exploration does not reach.
//
// So a script that writes an unlisted transition fails 1 when the write is
// new, or 3 when it goes through a declared write; declaring the move fails
// 2 when the table refuses it, and a table that stops allowing a declared
// move fails 2 as well. The store hands the scripts status sets derived
// from the tables (store.go, decision.go) rather than literals; these tests
// also catch a literal in Lua that drifts from the tables.

// scriptWrites is what one script may do to statuses: sites are the names
// scanStatusWrites gives its writes that may touch a status field (in any
// order); run and call are the moves it makes, "from→to", "→to" for a
// record it creates.
type scriptWrites struct {
	sites []string
	run   []string
	call  []string
}

// statusWrites declares every script with a write that may touch a status.
// A script that is not in scripts/ (yet) is skipped.
var statusWrites = map[string]scriptWrites{
	"create_run.lua": {
		sites: []string{"HSET run_key unpack(a.fields)"}, // the new run hash (runFields)
		run:   []string{"→created"},
	},
	"claim_step.lua": {
		sites: []string{"HSET run_key unpack(set)"}, // the attempt, its lease and, from a.created, status a.running
		run:   []string{"created→running"},
	},
	"commit_step.lua": {
		sites: []string{
			"HSET keys[i] unpack(c.fields)", // a new call hash (callFields), in ToolGate's status
			"HSET run_key unpack(set)",      // the run: its step's state and lease, its totals, its open count
		},
		call: []string{"→new", "→suspended", "→succeeded", "→failed", "→cancelled"},
	},
	"end_step.lua": {
		sites: []string{
			"HSET run_key unpack(set)", // the run's end: status=a.finish.status (Go: RunDone) and its termination
			"HSET run_key unpack(set)", // the next step, pending or claimed: no status
		},
		run: []string{"running→done"},
	},
	"finish_run.lua": {
		// status a.to (done) and the termination (lib.lua's termination: no
		// status), from the statuses Go derives (finishable)
		sites: []string{"HSET run_key unpack(termination(a.reason, a.code, a.detail, a.now))"},
		run:   []string{"created→done", "running→done", "waiting→done"},
	},
	"set_waiting.lua": {
		sites: []string{"HSET run_key status=a.to"}, // Go: RunWaiting
		run:   []string{"running→waiting"},
	},
	"cancel_run.lua": {
		sites: []string{
			"HSET key status=a.to", // every call not terminal (endedCalls) to cancelled (cancelCalls)
			"DEL held_key",         // the held decisions hash
			"HSET run_key unpack(termination(a.reason, '', a.detail, a.now))", // status=a.ended (done) and the termination
		},
		run:  []string{"created→done", "running→done", "waiting→done"},
		call: []string{"new→cancelled", "running→cancelled", "suspended→cancelled", "resuming→cancelled"},
	},
	"claim_call.lua": {
		sites: []string{
			"HSET call_key unpack(set)", // status=a.to (Go: running), from the statuses Go derives (claimableStatuses)
			"HSET key unpack(set)",      // status=a.to: another call of the step, new and never claimed
		},
		call: []string{"new→running", "resuming→running"},
	},
	"finish_call.lua": {
		sites: []string{
			"HSET call_key unpack(set)",           // status=a.to, the outcome, checked in Go (checkOutcome)
			"HSET call_key unpack(parked.fields)", // the parking fields (parkingFields)
		},
		call: []string{"running→succeeded", "running→failed", "running→suspended"},
	},
	"apply_decision.lua": {
		sites: []string{
			"HSET held_key a.call", "HDEL held_key a.call", "HDEL held_key a.call", // the held decisions hash
			"HSET call_key unpack(fields)", // the call: decision fields, then its status (decision.go's moves)
			"HSET run_key status=a.wake.to",
		},
		run: []string{"waiting→running"},
		// A resume goes through resuming, also in use_decision_as_result
		// mode, where the call completes at once.
		call: []string{"suspended→resuming", "suspended→cancelled", "resuming→succeeded"},
	},
	"drop_held.lua": {
		sites: []string{"HDEL held_key a.call"}, // the held decisions hash
	},
	"lib.lua": {
		// retire and inherit: an ended run's records expire whole after the
		// retention, and its step lists go; compact: a waiting run's event
		// stream is rebuilt as it is. They move no status.
		sites: []string{
			"PEXPIRE base .. 'run' retention_ms", "PEXPIRE base .. 'msgs' retention_ms", "PEXPIRE base .. 'events' retention_ms",
			"PEXPIRE k retention_ms", "DEL unpack(lists, i, math.min(i + 999, #lists))", "PEXPIRE base .. 'call:' .. id retention_ms",
			"PEXPIRE key ttl", "RESTORE stream ttl dump 'REPLACE'",
			"HDEL state ARGV[i]", "HSET state ARGV[i]", // set_state: the plugin state hash
			"HDEL state u.key", "HSET state u.key", // put_state: the plugin state hash
		},
	},
	"mark_sent.lua": {
		sites: []string{"HSET key m.field"}, // the outbox marks step_sent, sent and published (outbox.go)
	},
	"budget_reserve.lua": {
		sites: []string{"HSET budget_key 'hold:' .. a.holder"}, // a budget's hold: no run, no status
	},
	"budget_settle.lua": {
		sites: []string{"HDEL budget_key 'hold:' .. a.holder"}, // a budget's hold: no run, no status
	},
	"take_back_marks.lua": {
		sites: []string{"HSET key m.field"}, // the outbox mark sent, emptied (outbox.go)
	},
}

func TestTransitions_every_status_write_of_every_script_is_declared(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("scripts", "*.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanStatusWrites(string(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := slices.Clone(statusWrites[name].sites)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s writes statuses at %q, but statusWrites declares %q: declare each write "+
				"that may touch a status field, with the moves it makes", name, got, want)
		}
	}
}

func TestTransitions_declared_moves_are_allowed_by_the_domain_tables(t *testing.T) {
	for name, w := range statusWrites {
		for kind, moves := range map[string][]string{"run": w.run, "call": w.call} {
			for _, m := range moves {
				from, to, ok := strings.Cut(m, "→")
				if !ok {
					t.Errorf("%s: move %q is not from→to", name, m)
					continue
				}
				if !allowedMove(kind, from, to) {
					t.Errorf("%s declares the %s move %s, which pipeline's table refuses", name, kind, m)
				}
			}
		}
	}
}

func TestTransitions_the_scanner_finds_status_writes(t *testing.T) {
	src := `
local x = redis.call('HGET', KEYS[1], 'status') -- a read: 'status'
redis.call('HSET', KEYS[1], 'step', 1, "status", x)
redis.call("hset", KEYS[2], 'a', '1')
redis.call('HSET', KEYS[2], unpack(fields))
redis.pcall('HDEL', KEYS[3], 'status')
redis.call('HSET', KEYS[4], ARGV[1], 'done')
redis.call('RENAME', KEYS[1], KEYS[5])
redis.call(ARGV[2], KEYS[1], 'x')
redis.call('XADD', KEYS[6], '*', 'e', 'redis.call(\'HSET\', KEYS[1], \'status\', 1)')
`
	got, err := scanStatusWrites(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`HSET KEYS[1] status=x`, `HSET KEYS[2] unpack(fields)`, `HDEL KEYS[3] status`,
		`HSET KEYS[4] ARGV[1]`, `RENAME KEYS[1] KEYS[5]`, `CALL ARGV[2]`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sites = %q, want %q", got, want)
	}
	for _, bad := range []string{"local c = redis.call\nc('HSET', KEYS[1], 'status', 'x')", "local s = [[x]]"} {
		if _, err := scanStatusWrites(bad); err == nil {
			t.Errorf("scanStatusWrites(%q) passed; it cannot see the writes there", bad)
		}
	}
}

// allowedMove reports whether pipeline's tables allow a kind ("run" or
// "call") to move from → to; from "" creates the record.
func allowedMove(kind, from, to string) bool {
	if kind == "run" {
		if _, err := pipeline.ParseRunStatus(to); err != nil {
			return false
		}
		if from == "" {
			return pipeline.RunStatus(to) == pipeline.RunCreated
		}
		return pipeline.RunStatus(from).CanTransition(pipeline.RunStatus(to))
	}
	st, err := pipeline.ParseToolCallStatus(to)
	if err != nil {
		return false
	}
	if from == "" {
		// ToolGate may commit a call in a status a new call moves to
		// without being executed.
		return st == pipeline.CallNew || (st != pipeline.CallRunning && pipeline.CallNew.CanTransition(st))
	}
	return pipeline.ToolCallStatus(from).CanTransition(st)
}

// --- The scanner ---

var (
	// hashWriters write hash fields: args[2:] hold fields (and values for
	// the HSET family).
	hashWriters = map[string]bool{"HSET": true, "HMSET": true, "HSETNX": true, "HDEL": true, "HINCRBY": true, "HINCRBYFLOAT": true}
	// keyWriters drop, move, replace or expire whole keys, status included.
	keyWriters = map[string]bool{
		"DEL": true, "UNLINK": true, "RENAME": true, "RENAMENX": true, "COPY": true, "MOVE": true, "RESTORE": true,
		"EXPIRE": true, "PEXPIRE": true, "EXPIREAT": true, "PEXPIREAT": true, "GETDEL": true, "GETEX": true,
		"HGETDEL": true, "HGETEX": true, "HSETEX": true, "HEXPIRE": true, "HPEXPIRE": true, "HEXPIREAT": true,
		"HPEXPIREAT": true, "FLUSHDB": true, "FLUSHALL": true, "SWAPDB": true,
	}
	redisCall = regexp.MustCompile(`redis\s*\.\s*p?call\b`)
)

// scanStatusWrites names, in order, each redis.call or redis.pcall of a Lua
// script that may write a status field:
//
//	HSET KEYS[1] status='done'    the field 'status' with its value as written
//	HSET KEYS[2] unpack(fields)   fields the script cannot name (the first one)
//	HDEL KEYS[3] status           a field deleted
//	DEL KEYS[5]                   a whole key dropped, moved or expired
//	CALL ARGV[2]                  a command that is not a literal
//
// Arguments are as written, whitespace collapsed. Writes with literal fields
// other than status are not sites. It fails on what it cannot read: long
// strings or comments, and redis.call used other than as a call.
func scanStatusWrites(src string) ([]string, error) {
	code, inString, err := lexLua(src)
	if err != nil {
		return nil, err
	}
	var sites []string
	for _, loc := range redisCall.FindAllStringIndex(code, -1) {
		if inString[loc[0]] {
			continue
		}
		args, err := callArgs(code, inString, loc[1])
		if err != nil {
			return nil, fmt.Errorf("at byte %d: %w", loc[0], err)
		}
		if site := statusSite(args); site != "" {
			sites = append(sites, site)
		}
	}
	return sites, nil
}

// statusSite is the name of a call's status write, or "" when it writes
// none.
func statusSite(args []string) string {
	if len(args) == 0 {
		return "CALL"
	}
	cmd, ok := luaString(args[0])
	if !ok {
		return "CALL " + args[0]
	}
	cmd = strings.ToUpper(cmd)
	switch {
	case keyWriters[cmd]:
		return strings.Join(append([]string{cmd}, args[1:]...), " ")
	case !hashWriters[cmd] || len(args) < 2:
		return ""
	}
	key, rest := args[1], args[2:]
	for _, a := range rest {
		if strings.Contains(a, "unpack(") || a == "..." {
			return cmd + " " + key + " " + a
		}
	}
	step := 1 // HDEL: every argument is a field
	if cmd == "HSET" || cmd == "HMSET" || cmd == "HSETNX" || cmd == "HINCRBY" || cmd == "HINCRBYFLOAT" {
		step = 2
	}
	for i := 0; i < len(rest); i += step {
		field, ok := luaString(rest[i])
		switch {
		case !ok:
			return cmd + " " + key + " " + rest[i]
		case field != "status":
		case step == 2 && i+1 < len(rest):
			return cmd + " " + key + " status=" + rest[i+1]
		default:
			return cmd + " " + key + " status"
		}
	}
	return ""
}

// lexLua returns src without its comments and, per byte of that, whether it
// lies inside a string literal (quotes included).
func lexLua(src string) (string, []bool, error) {
	var code strings.Builder
	var inString []bool
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "--"):
			if strings.HasPrefix(src[i+2:], "[[") || strings.HasPrefix(src[i+2:], "[=") {
				return "", nil, fmt.Errorf("a long comment at byte %d: the scanner reads only line comments", i)
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case c == '[' && (strings.HasPrefix(src[i+1:], "[") || strings.HasPrefix(src[i+1:], "=")):
			return "", nil, fmt.Errorf("a long string at byte %d: the scanner reads only quoted strings", i)
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return "", nil, fmt.Errorf("an unterminated string at byte %d", i)
			}
			code.WriteString(src[i : j+1])
			for range j + 1 - i {
				inString = append(inString, true)
			}
			i = j
		default:
			code.WriteByte(c)
			inString = append(inString, false)
		}
	}
	return code.String(), inString, nil
}

// callArgs reads the argument list that starts at the first byte after
// redis.call that is not a space, and splits it at its top-level commas.
func callArgs(code string, inString []bool, at int) ([]string, error) {
	for at < len(code) && strings.ContainsRune(" \t\r\n", rune(code[at])) {
		at++
	}
	if at >= len(code) || code[at] != '(' {
		return nil, errors.New("redis.call is used other than as a call: the scanner cannot see what it writes")
	}
	var args []string
	depth, start := 0, at+1
	for i := at; i < len(code); i++ {
		if inString[i] {
			continue
		}
		switch code[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				if a := strings.Join(strings.Fields(code[start:i]), " "); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, nil
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.Join(strings.Fields(code[start:i]), " "))
				start = i + 1
			}
		}
	}
	return nil, errors.New("an unclosed redis.call")
}

// luaString returns the value of a, when a is one quoted string literal
// (escapes aside: field names and commands carry none).
func luaString(a string) (string, bool) {
	if len(a) < 2 || (a[0] != '\'' && a[0] != '"') || a[len(a)-1] != a[0] {
		return "", false
	}
	inner := a[1 : len(a)-1]
	if strings.ContainsRune(inner, rune(a[0])) || strings.ContainsRune(inner, '\\') {
		return "", false
	}
	return inner, true
}
