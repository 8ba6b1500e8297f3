package archive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/topics"
)

// files appends records to JSON Lines files in dir, one per UTC day and
// process: runs-<YYYY-MM-DD>-<process>.jsonl. Each record is one line,
// synced to disk before write returns; a write that fails is cut off the
// file again, so that no half line is left for the next to follow.
type files struct {
	dir     string
	process string
	now     func() time.Time

	mu   sync.Mutex
	day  string
	file *os.File
}

func newFiles(dir, process string, now func() time.Time) (*files, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("archive: runs.archive.dir: %w", err)
	}
	return &files{dir: dir, process: process, now: now}, nil
}

// Name is the file of process's records of day (YYYY-MM-DD).
func Name(day, process string) string {
	return "runs-" + day + "-" + process + ".jsonl"
}

func (f *files) write(rec topics.RunArchived) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	line = append(line, '\n')
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := f.open(f.now().UTC().Format(time.DateOnly))
	if err != nil {
		return err
	}
	info, err := file.Stat()
	if err != nil {
		return err
	}
	if _, err = file.Write(line); err == nil {
		err = file.Sync()
	}
	if err != nil {
		_ = file.Truncate(info.Size())
		return fmt.Errorf("write %s: %w", file.Name(), err)
	}
	return nil
}

// open returns the file of day, closing the previous day's.
func (f *files) open(day string) (*os.File, error) {
	if f.file != nil && f.day == day {
		return f.file, nil
	}
	if f.file != nil {
		_ = f.file.Close()
		f.file = nil
	}
	file, err := os.OpenFile(filepath.Join(f.dir, Name(day, f.process)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	f.file, f.day = file, day
	return file, nil
}
