package embedded_test

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// The members in these tests have a one-minute session timeout: one that is
// gone within the test's deadline was removed because its connection
// closed, not because its session expired.
const memberSessionTimeout = time.Minute

func TestKafka_removes_a_group_member_whose_connection_closes(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0")
	addr := k.Addrs()[0]
	const group = "reaped"

	conn := dial(t, addr)
	id := joinAndSync(t, conn, group)
	if got := members(t, addr, group); !slices.Contains(got, id) {
		t.Fatalf("members = %v, want %s among them", got, id)
	}

	_ = conn.Close() // as when the process is killed: no LeaveGroup
	waitGone(t, addr, group, id)
}

// A member whose process dies while its JoinGroup waits for the others is
// the case kfake on its own keeps for ever (see reaper.go).
func TestKafka_removes_a_member_whose_connection_closes_while_it_waits_in_JoinGroup(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0")
	addr := k.Addrs()[0]
	const group = "reaped-while-joining"

	first := dial(t, addr)
	joinAndSync(t, first, group) // stable, and it will not rejoin

	second, raw := dialRaw(t, addr)
	id := memberID(t, second, group)
	joined := make(chan error, 1)
	go func() { // waits for the first member to rejoin
		_, err := join(second, group, id)
		joined <- err
	}()
	waitFor(t, "the second member to wait in the group", func() bool {
		return slices.Contains(members(t, addr, group), id)
	})

	_ = raw.Close() // the process dies: its socket closes under the waiting JoinGroup
	if err := <-joined; err == nil {
		t.Fatal("JoinGroup answered before the rebalance could complete")
	}
	waitGone(t, addr, group, id)
}

func dial(t *testing.T, addr string) *sarama.Broker {
	t.Helper()
	b, _ := dialRaw(t, addr)
	return b
}

// dialRaw connects to addr and also returns the socket, to close it under
// Sarama: Broker.Close waits for the answer to a request in flight.
func dialRaw(t *testing.T, addr string) (*sarama.Broker, net.Conn) {
	t.Helper()
	d := &socketDialer{}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Net.Proxy.Enable = true
	cfg.Net.Proxy.Dialer = d
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		t.Fatalf("open %s: %v", addr, err)
	}
	if ok, err := b.Connected(); !ok {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, d.conn
}

// socketDialer dials TCP and keeps the connection it made.
type socketDialer struct{ conn net.Conn }

func (d *socketDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := net.Dial(network, addr)
	d.conn = c
	return c, err
}

// memberID asks the coordinator for a member ID (the first JoinGroup of
// KIP-394).
func memberID(t *testing.T, b *sarama.Broker, group string) string {
	t.Helper()
	resp, err := join(b, group, "")
	if err != nil {
		t.Fatalf("JoinGroup: %v", err)
	}
	if !errors.Is(resp.Err, sarama.ErrMemberIdRequired) || resp.MemberId == "" {
		t.Fatalf("first JoinGroup: %v, member %q; want ErrMemberIdRequired and a member ID", resp.Err, resp.MemberId)
	}
	return resp.MemberId
}

// joinAndSync makes b the only member of group and returns its member ID.
func joinAndSync(t *testing.T, b *sarama.Broker, group string) string {
	t.Helper()
	id := memberID(t, b, group)
	resp, err := join(b, group, id)
	if err != nil || !errors.Is(resp.Err, sarama.ErrNoError) {
		t.Fatalf("JoinGroup: %v, %v", err, resp.Err)
	}
	sync := &sarama.SyncGroupRequest{Version: 3, GroupId: group, GenerationId: resp.GenerationId, MemberId: id}
	if err := sync.AddGroupAssignmentMember(id, &sarama.ConsumerGroupMemberAssignment{}); err != nil {
		t.Fatal(err)
	}
	sresp, err := b.SyncGroup(sync)
	if err != nil || !errors.Is(sresp.Err, sarama.ErrNoError) {
		t.Fatalf("SyncGroup: %v, %v", err, sresp.Err)
	}
	return id
}

func join(b *sarama.Broker, group, id string) (*sarama.JoinGroupResponse, error) {
	req := &sarama.JoinGroupRequest{
		Version:          5,
		GroupId:          group,
		SessionTimeout:   int32(memberSessionTimeout / time.Millisecond),
		RebalanceTimeout: int32(memberSessionTimeout / time.Millisecond),
		MemberId:         id,
		ProtocolType:     "consumer",
	}
	if err := req.AddGroupProtocolMetadata("range", &sarama.ConsumerGroupMemberMetadata{Topics: []string{"t"}}); err != nil {
		return nil, err
	}
	return b.JoinGroup(req)
}

// members returns the IDs of group's members.
func members(t *testing.T, addr, group string) []string {
	t.Helper()
	admin, err := sarama.NewClusterAdmin([]string{addr}, sarama.NewConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()
	ds, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(ds) != 1 {
		t.Fatalf("describe %s: %v", group, err)
	}
	var ids []string
	for id := range ds[0].Members {
		ids = append(ids, id)
	}
	return ids
}

func waitGone(t *testing.T, addr, group, id string) {
	t.Helper()
	waitFor(t, "member "+id+" to leave "+group, func() bool {
		return !slices.Contains(members(t, addr, group), id)
	})
}

// waitFor polls cond every 20ms, failing t after 15s, a quarter of the
// members' session timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(memberSessionTimeout / 4)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
