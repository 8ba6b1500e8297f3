package embedded

import (
	"errors"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

// reaper removes the consumer group members of client processes that died,
// working around a kfake bug that can otherwise keep a dead member in its
// group for ever, holding its partitions (docs/adr/0006-consumer-group-
// recovery.md has the details and the measurements).
//
// The bug: kfake times a classic member's session from its last heartbeat
// or delivered JoinGroup/SyncGroup response, and a member joining for the
// first time has no session timer until its JoinGroup is answered. If the
// member's process dies while that JoinGroup waits for the rebalance, kfake
// still counts the member as joined and answers it when the rebalance
// completes; when the answer cannot be delivered (its connection is gone)
// no timer is started. The member stays in the new generation with its
// share of the partitions and is never expired: once the leader has synced,
// nothing removes it until another member joins or leaves. Apache Kafka
// starts every member's session timer when the join completes, so there the
// dead member is gone a session timeout later.
//
// The reaper watches the broker's client connections. When one closes, each
// classic group member that joined over it is dealt with as follows:
//
//   - A dynamic member (no group.instance.id) is removed at once with a
//     LeaveGroup in its name, as if its process had closed its consumer
//     cleanly: it can never come back under the same member ID, so waiting
//     for its session to time out would only delay the rebalance (and on
//     kfake that wait compounds, see the ADR).
//   - A static member gets one Heartbeat in its name, which starts its
//     session timer: a restart with the same instance ID within the session
//     timeout takes its place without a rebalance, as on Kafka; otherwise
//     it expires.
//
// A group in CompletingRebalance is left alone until it moves on: kfake
// miscounts a member removed while its SyncGroup is parked, and the
// rebalance it starts would then wait out its whole rebalance timeout.
type reaper struct {
	cluster *kfake.Cluster
	admin   admin         // its connection, for the requests it sends (owned by its chore)
	every   time.Duration // how often it looks again while closed connections are pending

	mu     sync.Mutex
	open   map[string]int       // remote address → client connections open from it
	closed map[string]time.Time // remote address of a closed client connection → when

	wake  chan struct{}
	chore chore

	// Owned by its chore, as admin is.
	done map[string]string // member ID → its closed address, once handled
}

// closedGrace is how long a closed connection's address is kept when no
// member has it: a JoinGroup read before the close may still be on its way
// into the group.
const closedGrace = 5 * time.Second

func newReaper() *reaper {
	return &reaper{
		admin:  admin{client: "stepwise-embedded-reaper"},
		every:  250 * time.Millisecond,
		open:   map[string]int{},
		closed: map[string]time.Time{},
		wake:   make(chan struct{}, 1),
		chore:  newChore(),
		done:   map[string]string{},
	}
}

// connOpened records a client connection from remote. An address in use
// again (the client's port was reused) is no longer a closed one: its
// members may be the new connection's.
func (r *reaper) connOpened(remote string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[remote]++
	delete(r.closed, remote)
}

// connClosed records that a client connection from remote closed. It never
// blocks.
func (r *reaper) connClosed(remote string) {
	r.mu.Lock()
	if r.open[remote]--; r.open[remote] > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.open, remote)
	r.closed[remote] = time.Now()
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// start runs the reaper on cluster, reached at addr, until close.
func (r *reaper) start(cluster *kfake.Cluster, addr string) {
	r.cluster, r.admin.addr = cluster, addr
	r.chore.start(r.every, r.wake, r.sweep, r.admin.drop)
}

// close stops the reaper and waits for it (chore.close).
func (r *reaper) close() { r.chore.close() }

// sweep handles every member that joined over a closed connection and is
// not handled yet. It forgets a closed address once the grace period is
// over and no member of it is left to handle.
func (r *reaper) sweep() {
	r.mu.Lock()
	closed := maps.Clone(r.closed)
	r.mu.Unlock()
	if len(closed) == 0 {
		return
	}
	groups, err := r.admin.groups()
	if err != nil {
		return // the next tick tries again
	}
	pending := map[string]bool{} // closed addresses with a member left to handle
	for _, g := range groups {
		info := r.cluster.GroupInfo(g)
		if info == nil {
			continue
		}
		for _, m := range info.Members {
			if _, ok := closed[m.ClientHost]; !ok {
				continue
			}
			if _, ok := r.done[m.MemberID]; ok {
				continue
			}
			var handled bool
			switch {
			case info.State == "CompletingRebalance":
			case m.InstanceID == nil:
				handled = r.leave(g, m.MemberID)
			default:
				handled = r.heartbeat(g, m.MemberID, info.Epoch)
			}
			if handled {
				r.done[m.MemberID] = m.ClientHost
			} else {
				pending[m.ClientHost] = true
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for a, at := range closed {
		if !pending[a] && time.Since(at) > closedGrace && r.closed[a] == at {
			delete(r.closed, a)
		}
	}
	for id, a := range r.done {
		if _, ok := r.closed[a]; !ok {
			delete(r.done, id)
		}
	}
}

// leave removes member from group and reports whether it is done with the
// member: it has left, or it is no classic member any more.
func (r *reaper) leave(group, member string) bool {
	b, err := r.admin.conn()
	if err != nil {
		return false
	}
	resp, err := b.LeaveGroup(&sarama.LeaveGroupRequest{GroupId: group, MemberId: member})
	if err != nil {
		r.admin.drop()
		return false
	}
	return !retriable(resp.Err)
}

// heartbeat heartbeats for member of group at generation and reports
// whether it is done with the member: its session timer now runs (no
// error, or ErrRebalanceInProgress), or it is no classic member any more.
func (r *reaper) heartbeat(group, member string, generation int32) bool {
	b, err := r.admin.conn()
	if err != nil {
		return false
	}
	resp, err := b.Heartbeat(&sarama.HeartbeatRequest{GroupId: group, MemberId: member, GenerationId: generation})
	if err != nil {
		r.admin.drop()
		return false
	}
	return !retriable(resp.Err) && !errors.Is(resp.Err, sarama.ErrIllegalGeneration)
}

func retriable(err sarama.KError) bool {
	return errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable)
}

// tracked is a listener that reports each connection it accepts to
// onOpen, and its close to onClose, by the remote address kfake records as
// a member's client host.
type tracked struct {
	net.Listener
	onOpen, onClose func(remote string)
}

func (l tracked) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.onOpen(c.RemoteAddr().String())
	return &trackedConn{Conn: c, onClose: l.onClose}, nil
}

type trackedConn struct {
	net.Conn
	once    sync.Once
	onClose func(remote string)
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.onClose(c.RemoteAddr().String()) })
	return err
}
