package kafkacluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// EnvDir names the directory of the cluster scripts/kafka runs; by default
// stepwise-kafka under the temporary directory.
const EnvDir = "STEPWISE_KAFKA_DIR"

// Options says what cluster Up starts.
type Options struct {
	// Dir holds the cluster's state, configuration, data and logs; Up
	// refuses a Dir whose cluster still runs. Required.
	Dir string
	// Nodes is the number of broker+controller nodes; default 3.
	Nodes int
	// Cache is where the artifacts are kept (default CacheDir()).
	Cache string
	// Heap is each node's Java heap, as -Xmx takes it; default 384m.
	Heap string
	// Log receives Maven's output and progress lines; default io.Discard.
	Log io.Writer
}

// Cluster is a running (or partly stopped) Apache Kafka cluster. Its
// methods are not safe for concurrent use; one Cluster value per process.
type Cluster struct {
	Dir       string `json:"-"`
	ClusterID string `json:"cluster_id"`
	Libs      string `json:"libs"`
	Heap      string `json:"heap"`
	Nodes     []Node `json:"nodes"`

	log io.Writer
}

// Node is one KRaft node, a broker and a controller; IDs are 1-based.
type Node struct {
	ID             int `json:"id"`
	Port           int `json:"port"`
	ControllerPort int `json:"controller_port"`
	PID            int `json:"pid,omitempty"`
}

// Addr is the node's client listener, host:port.
func (n Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// Up fetches the artifacts if needed, formats the KRaft storage of
// o.Nodes nodes on free loopback ports, starts them and waits until every
// broker answers in the cluster's metadata (at most two minutes, or ctx).
// A cluster that does not come up is taken down again.
func Up(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("kafka cluster: no directory")
	}
	o.Nodes = max(o.Nodes, 0)
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Heap == "" {
		o.Heap = "384m"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if c, err := Load(o.Dir); err == nil && c.running() > 0 {
		return nil, fmt.Errorf("kafka cluster in %s already runs (%s); take it down first", o.Dir, c.Brokers())
	}
	if o.Cache == "" {
		var err error
		if o.Cache, err = CacheDir(); err != nil {
			return nil, err
		}
	}
	libs, err := Fetch(ctx, o.Cache, o.Log)
	if err != nil {
		return nil, err
	}
	if err := clearDir(o.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafka cluster: %w", err)
	}
	c := &Cluster{Dir: o.Dir, ClusterID: newClusterID(), Libs: libs, Heap: o.Heap, log: o.Log}
	ports, err := freePorts(2 * o.Nodes)
	if err != nil {
		return nil, err
	}
	for i := range o.Nodes {
		c.Nodes = append(c.Nodes, Node{ID: i + 1, Port: ports[2*i], ControllerPort: ports[2*i+1]})
	}
	for _, n := range c.Nodes {
		if err := c.format(ctx, n); err != nil {
			return nil, err
		}
	}
	for i := range c.Nodes {
		if err := c.spawn(i); err != nil {
			c.Down()
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.waitBrokers(wctx, c.nodeIDs()); err != nil {
		c.Down()
		return nil, err
	}
	return c, nil
}

// Load reads the state of the cluster kept in dir.
func Load(dir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return nil, fmt.Errorf("kafka cluster in %s: %w", dir, err)
	}
	c := &Cluster{Dir: dir, log: io.Discard}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("kafka cluster in %s: %w", dir, err)
	}
	return c, nil
}

// SetLog sends the cluster's progress lines to w.
func (c *Cluster) SetLog(w io.Writer) { c.log = w }

// Brokers lists every node's client listener, comma-separated: the value
// of STEPWISE_KAFKA_BROKERS and STEPWISE_TEST_KAFKA.
func (c *Cluster) Brokers() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return strings.Join(addrs, ",")
}

// Down kills every node and removes the cluster's directory: its data goes
// too, so a clean shutdown would serve nothing.
func (c *Cluster) Down() error {
	var errs []error
	for i := range c.Nodes {
		if err := c.stop(i, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// clearDir empties dir for a new cluster: a directory that does not
// exist, is empty or holds a cluster that no longer runs (its
// cluster.json). Anything else is refused, never removed.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kafka cluster: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil {
		return fmt.Errorf("kafka cluster: %s holds files but no cluster.json; not removing it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("kafka cluster: %w", err)
	}
	return nil
}

// save writes the cluster's state to Dir/cluster.json.
func (c *Cluster) save() error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, "cluster.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("kafka cluster: %w", err)
	}
	return os.Rename(tmp, filepath.Join(c.Dir, "cluster.json"))
}

func (c *Cluster) nodeIDs() []int {
	ids := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		ids[i] = n.ID
	}
	return ids
}

// running counts the nodes whose process is alive.
func (c *Cluster) running() int {
	n := 0
	for _, node := range c.Nodes {
		if alive(node.PID) {
			n++
		}
	}
	return n
}

// node returns the index of the node with id, 1-based as the command line
// names them.
func (c *Cluster) node(id int) (int, error) {
	for i, n := range c.Nodes {
		if n.ID == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("kafka cluster: no node %d (it has 1 to %d)", id, len(c.Nodes))
}

// newClusterID is a KRaft cluster id: 16 random bytes, URL-safe base64
// without padding, as `kafka-storage random-uuid` prints. Like Kafka's own
// Uuid, it never starts with '-', which a command line would take for a
// flag.
func newClusterID() string {
	b := make([]byte, 16)
	for {
		rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kafka cluster: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
