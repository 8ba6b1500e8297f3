package pipelinetest

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// ErrCrashed is what every operation of a crashed worker returns.
var ErrCrashed = errors.New("pipelinetest: the worker has crashed")

// Injector counts a worker's operations — each Redis command or pipeline,
// each publish — and crashes the worker at operation At: that operation and
// every later one fail with ErrCrashed without reaching Redis or the bus.
// At 0 never crashes. Safe for concurrent use.
type Injector struct {
	At int

	mu      sync.Mutex
	n       int
	crashed bool
}

// step counts one operation and says whether it may run.
func (in *Injector) step() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.n++
	if in.crashed || (in.At > 0 && in.n >= in.At) {
		in.crashed = true
		return ErrCrashed
	}
	return nil
}

// Crashed reports whether the worker has crashed.
func (in *Injector) Crashed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.crashed
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
