package pipelinetest

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// ErrCrashed is what every operation of a crashed worker returns, and
// ErrTransient what the one operation a transient fault fails returns.
var (
	ErrCrashed   = errors.New("pipelinetest: the worker has crashed")
	ErrTransient = errors.New("pipelinetest: one operation failed")
)

// Injector counts a worker's operations — each Redis command or pipeline,
// each publish, each RunEnd hook of the scenarios' probe plugin — and
// fails operation At without it reaching Redis, the bus or the hook. A
// crash (Transient false) fails that operation and every later one with
// ErrCrashed: the worker is dead. A transient fault fails that one
// operation with ErrTransient and lets every later one through: the
// worker sees an error and goes on as its code does. At 0 never fails.
// Safe for concurrent use.
type Injector struct {
	At        int
	Transient bool

	mu  sync.Mutex
	n   int
	hit bool
}

// step counts one operation and says whether it may run.
func (in *Injector) step() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.n++
	switch {
	case in.Transient && in.n == in.At:
		in.hit = true
		return ErrTransient
	case in.Transient:
		return nil
	case in.hit || (in.At > 0 && in.n >= in.At):
		in.hit = true
		return ErrCrashed
	}
	return nil
}

// Crashed reports whether the worker has crashed.
func (in *Injector) Crashed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hit && !in.Transient
}

// Hit reports whether operation At was reached: the worker has crashed, or
// the transient fault has failed its operation.
func (in *Injector) Hit() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hit
}

// Ops is how many operations the worker has attempted.
func (in *Injector) Ops() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}

// Hook is the injector as a go-redis hook.
func (in *Injector) Hook() redis.Hook { return hook{in} }

// Publisher wraps p so its publishes count and crash.
func (in *Injector) Publisher(p message.Publisher) message.Publisher { return faultyPublisher{p, in} }

type hook struct{ in *Injector }

func (h hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.in.step(); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.in.step(); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

type faultyPublisher struct {
	message.Publisher
	in *Injector
}

func (p faultyPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.in.step(); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}
