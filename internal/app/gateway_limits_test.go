package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

const limitsConfig = testConfig + `gateway: {read_header_timeout: 500ms, read_timeout: 2s, write_timeout: 2s, idle_timeout: 2s, max_header_bytes: 4096, max_streams_per_key: 2}
`

// rawConn opens a TCP connection to the gateway at base and writes s.
func rawConn(t *testing.T, base, s string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, s); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answer reads what the server says on conn within d: the status line, or
// "closed" when it closes the connection without a word.
func answer(t *testing.T, conn net.Conn, d time.Duration) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(conn).ReadString('\n')
	switch {
	case err == nil:
		return strings.TrimSpace(line)
	case err == io.EOF || strings.Contains(err.Error(), "reset"):
		return "closed"
	default:
		t.Fatalf("the server neither answered nor closed within %s: %v", d, err)
		return ""
	}
}

// Slow and stalled clients, too-large headers and too many event streams
// are refused with a clear answer, and the gateway goes on serving.
func TestGatewayLimits_slow_and_greedy_clients_are_cut_and_the_server_stays_up(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, limitsConfig))
	workers(t, stack)
	base := serve(t, stack)

	// Headers that never end (slowloris): the connection is closed.
	slow := rawConn(t, base, "GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
	if got := answer(t, slow, 5*time.Second); got != "closed" && !strings.Contains(got, "408") {
		t.Errorf("stalled headers: %q, want the connection closed", got)
	}

	// A body that stops halfway: 408, with the error envelope, though the
	// read and write timeouts are equal (as the defaults are).
	stalled := rawConn(t, base, "POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent\":")
	if got := answer(t, stalled, 5*time.Second); !strings.Contains(got, "408") {
		t.Errorf("stalled body: %q, want 408", got)
	}

	// Headers over max_header_bytes: 431.
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/runs", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("big headers: %v", err)
	} else if _ = res.Body.Close(); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("big headers: %d, want 431", res.StatusCode)
	}

	// Event streams: two open for this client, a third is 429.
	id := createRun(t, base, "limits-wait", "assistant", `{"provider":"script","turns":[{"text":"t","tool_calls":[{"name":"sleep","arguments":{"ms":60000}}]}]}`)
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+id+"/events", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, cancel
	}
	var cancels []context.CancelFunc
	for i := range 3 {
		res, cancel := open()
		cancels = append(cancels, cancel)
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Errorf("event stream %d: %d, want %d", i+1, res.StatusCode, want)
		}
		if i == 2 {
			body, _ := io.ReadAll(res.Body)
			if !strings.Contains(string(body), "max_streams_per_key") || res.Header.Get("Retry-After") == "" {
				t.Errorf("429 body %s, Retry-After %q", body, res.Header.Get("Retry-After"))
			}
		}
	}
	cancels[0]()
	cancels[2]()
	testinfra.Eventually(t, 5*time.Second, func() bool {
		res, cancel := open()
		defer cancel()
		return res.StatusCode == http.StatusOK
	}, func() string { return "a stream slot was not given back when its client left" })
	cancels[1]()

	// A stream outlives write_timeout (2s): each write gets its own
	// deadline. This run's last events come 3 s after the stream opened.
	late := createRun(t, base, "limits-late", "assistant", script(call("S", "sleep", `{"ms":3000}`)))
	res, err := http.Get(base + "/v1/runs/" + late + "/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if !strings.Contains(string(body), "event: run.finished") {
		t.Errorf("a stream longer than write_timeout was cut:\n%s", body)
	}

	// And the gateway serves on: a run goes through.
	done := createRun(t, base, "limits-after", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, done, 30*time.Second), 2)
	if v := getRun(t, base, id); v.Status != pipeline.RunRunning {
		t.Errorf("the sleeping run is %s", v.Status)
	}
}

// No API key and an address beyond loopback: the gateway refuses to start
// and says why, unless --insecure; with a key it starts.
func TestGatewayLimits_a_gateway_without_keys_stays_on_loopback(t *testing.T) {
	in := newInfra(t)
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	stack := connect(t, in, parseConfig(t, testConfig))
	err := stack.RunGateway(context.Background(), listen())
	if err == nil || !strings.Contains(err.Error(), "beyond loopback, with no API key") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("RunGateway on 0.0.0.0 with no key: %v", err)
	}
	insecure := connect(t, in, parseConfig(t, testConfig))
	insecure.Insecure = true
	t.Setenv("STEPWISE_TEST_KEY", "k-123456")
	keyed := connect(t, in, parseConfig(t, testConfig+"auth: {keys: [{name: ops, key_env: STEPWISE_TEST_KEY, scopes: [admin]}]}\n"))
	for _, c := range []struct {
		name  string
		stack *app.Stack
	}{{"--insecure", insecure}, {"a key", keyed}} {
		name, stack := c.name, c.stack
		l := listen()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- stack.RunGateway(ctx, l) }()
		url := fmt.Sprintf("http://127.0.0.1:%d/healthz", l.Addr().(*net.TCPAddr).Port)
		testinfra.Eventually(t, 5*time.Second, func() bool {
			res, err := http.Get(url)
			if err == nil {
				_ = res.Body.Close()
			}
			return err == nil && res.StatusCode == http.StatusOK
		}, func() string { return "the gateway did not serve with " + name })
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
