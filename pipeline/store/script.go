package store

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// script is an EVALSHA of one of the store's scripts, built in the one
// slice go-redis sends: "evalsha", the script's hash, the number of keys,
// the keys, then the arguments. go-redis's own EvalSha copies keys and
// arguments into a new slice and boxes every key again; on the hot path
// that was about 2 KB a step, and the slices the arguments grew through
// before it about 1 KB more. Keys come first: key after arg panics, a bug
// of the caller.
type script struct {
	sc    *redis.Script
	args  []any
	nkeys int
	buf   *[]any // where args goes back to the pool (release)
}

// scriptArgs holds the argument slices of commands that have been sent:
// four a step, about 2 KB, are otherwise made anew.
var scriptArgs = sync.Pool{New: func() any { return new([]any) }}

// newScript starts a command of sc with room for n keys and arguments in
// all (a guess too small only costs a copy).
func newScript(sc *redis.Script, n int) script {
	buf := scriptArgs.Get().(*[]any)
	if cap(*buf) < 3+n {
		*buf = make([]any, 0, 3+n)
	}
	args := append((*buf)[:0], "evalsha", sc.Hash(), 0)
	return script{sc: sc, args: args, buf: buf}
}

// release gives c's arguments back for another command to use; c and the
// commands it made must not be used after. The store's runners call it
// once a command's reply is read (go-redis is done with its arguments when
// Process returns).
func (c *script) release() {
	clear(c.args)
	*c.buf = c.args[:0]
	scriptArgs.Put(c.buf)
	c.args, c.buf = nil, nil
}

// scriptOf is sc with keys and args, for a caller that has them apart.
func scriptOf(sc *redis.Script, keys []string, args []any) script {
	c := newScript(sc, len(keys)+len(args))
	for _, k := range keys {
		c.key(k)
	}
	c.args = append(c.args, args...)
	return c
}

func (c *script) key(k string) {
	if len(c.args) != 3+c.nkeys {
		panic("store: a script's key after its arguments")
	}
	c.args = append(c.args, k)
	c.nkeys++
}

func (c *script) arg(a ...any) { c.args = append(c.args, a...) }

// cmd is the command to send; each call makes a new one of the same
// arguments (a script Redis had not cached is sent again once loaded).
func (c *script) cmd(ctx context.Context) *redis.Cmd {
	c.args[2] = c.nkeys
	cmd := redis.NewCmd(ctx, c.args...)
	if c.nkeys > 0 {
		cmd.SetFirstKeyPos(3) // where a cluster client finds the slot
	}
	return cmd
}
