package console_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// consoleKey is the admin key stepwise.yaml names (STEPWISE_TEST_CONSOLE_KEY).
const consoleKey = "console-key-123456"

// devBinary returns the stepwise binary to run: STEPWISE_BIN, else one
// built from the repository two directories up.
func devBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("STEPWISE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "stepwise")
	build := exec.Command("go", "build", "-o", bin, "./cmd/stepwise")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/stepwise: %v\n%s", err, out)
	}
	return bin
}

// devHTTP matches the line `stepwise dev` prints its gateway's address in.
var devHTTP = regexp.MustCompile(`http=(http://\S+)`)

// startDev runs `stepwise dev` with stepwise.yaml on free ports until t
// ends and returns its gateway's base URL once it is ready.
func startDev(t *testing.T) string {
	t.Helper()
	dev := exec.Command(devBinary(t), "dev", "--config", "stepwise.yaml", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0")
	dev.Env = append(os.Environ(), "STEPWISE_TEST_CONSOLE_KEY="+consoleKey)
	var stderr bytes.Buffer
	dev.Stderr = &stderr
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = dev.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = dev.Process.Kill()
			<-exited
		}
	})
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := devHTTP.FindStringSubmatch(lines.Text()); m != nil {
				addr <- m[1]
			}
		}
		_ = dev.Wait()
		close(exited)
	}()
	var base string
	select {
	case base = <-addr:
	case <-exited:
		t.Fatalf("stepwise dev exited: %s", stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("stepwise dev printed no address within a minute")
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stepwise dev at %s is not ready: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keyDo sends body as JSON with the console's key and decodes the answer
// into into; it returns the status code.
func keyDo(t *testing.T, method, url string, body, into any) int {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+consoleKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil {
		_ = json.NewDecoder(res.Body).Decode(into)
	}
	return res.StatusCode
}
