package store

import (
	"context"

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
}

// newScript starts a command of sc with room for n keys and arguments in
// all (a guess too small only costs a copy).
func newScript(sc *redis.Script, n int) script {
	args := make([]any, 3, 3+n)
	args[0], args[1] = "evalsha", sc.Hash()
	return script{sc: sc, args: args}
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
