package worker

import (
	"fmt"
	"runtime/debug"

	"github.com/ThreeDotsLabs/watermill/message"
)

// warm is where the goroutines that run handlers wait for the next
// message (Warm).
var warm = make(chan func()) // unbuffered: taken by a runner that is idle

// Warm returns h run on a goroutine that outlives the message, as the
// pool's do: Watermill's router handles each message on a goroutine of its
// own, whose stack starts small and is copied each time it doubles on the
// way into the Redis and Kafka clients (6 % of a worker process's CPU on
// ten-steps). The router's goroutine waits for h, so the partition still
// waits for its message, and a panic in h is raised again there, with
// h's stack in its value, for the router's Recoverer.
func Warm(h message.NoPublishHandlerFunc) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		var (
			err    error
			raised any
		)
		done := make(chan struct{})
		hand(warm, func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					raised = fmt.Sprintf("%v\n\nraised in the handler:\n%s", r, debug.Stack())
				}
			}()
			err = h(msg)
		})
		<-done
		if raised != nil {
			panic(raised)
		}
		return err
	}
}
