package store

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestScript_sends_evalsha_the_keys_then_the_arguments(t *testing.T) {
	sc := redis.NewScript("return 1")
	c := newScript(sc, 1) // too small a guess: the slice grows
	c.key("k1")
	c.key("k2")
	c.arg("a", 7)
	c.arg()
	got := c.cmd(context.Background()).Args()
	want := []any{"evalsha", sc.Hash(), 2, "k1", "k2", "a", 7}
	if !slices.Equal(got, want) {
		t.Errorf("args %v, want %v", got, want)
	}
	if of := scriptOf(sc, []string{"k1", "k2"}, []any{"a", 7}); !slices.Equal(of.cmd(context.Background()).Args(), want) {
		t.Errorf("scriptOf's args %v, want %v", of.args, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("a key after the arguments was taken")
		}
	}()
	c.key("k3")
}

func TestScript_released_arguments_hold_nothing_and_serve_the_next_commands(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race a sync.Pool drops what it is given at random")
	}
	sc := redis.NewScript("return 1")
	c := newScript(sc, 8)
	c.key("a key")
	c.arg("an argument", "another")
	held := c.args[:cap(c.args)]
	c.release()
	for i, v := range held {
		if v != nil {
			t.Errorf("released slice holds %v at %d", v, i)
		}
	}
	// A command made once released ones exist reuses one (sync.Pool: most
	// of the time, hence an average over many).
	if n := testing.AllocsPerRun(100, func() {
		c := newScript(sc, 4)
		c.key("k")
		c.release()
	}); n > 1 {
		t.Errorf("a command costs %v allocations once released ones exist, want 1 (its script's hash as an any)", n)
	}
}
