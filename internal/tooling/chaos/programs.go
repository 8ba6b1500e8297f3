package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// programs are the stepwise programs the harness runs, each as OS processes.
var programNames = []string{"stepwise", "gateway", "stepworker", "toolworker"}

// buildPrograms builds the programs of the module at src into dir, once,
// with one go build.
func buildPrograms(ctx context.Context, src, dir string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, p := range programNames {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build the programs in %s: %w\n%s", src, err, out.String())
	}
	return nil
}

// checkPrograms fails unless dir holds every program.
func checkPrograms(dir string) error {
	var errs []error
	for _, p := range programNames {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			errs = append(errs, fmt.Errorf("program %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// moduleRoot returns the directory of the go.mod above the current
// directory, by asking go itself.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: set the source directory (" + EnvSrc + ")")
	}
	return filepath.Dir(mod), nil
}

func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
