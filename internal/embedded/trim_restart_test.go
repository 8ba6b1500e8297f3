package embedded_test

import (
	"path/filepath"
	"testing"

	"github.com/stepwise-run/stepwise/internal/embedded"
)

// A partition whose records were all read keeps its last one: a broker
// restarted on its data directory learns from it where the partition ends,
// so what is published next gets the next offsets, above what its readers
// committed, and they read it.
func TestKafka_with_a_data_dir_keeps_its_offsets_across_a_restart_after_trimming(t *testing.T) {
	t.Parallel()
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "kafka")
	k := startKafka(t, addr, embedded.WithDataDir(dir), embedded.WithTopics("work"), embedded.WithPartitions(1),
		embedded.WithTrimEvery(trimEvery))
	client := newClient(t, k)
	produce(t, client, "work", 0, 300)
	commit(t, client, "g", "work", 300)
	waitLogStart(t, client, "work", 299)
	client.Close()
	k.Close()

	k = startKafka(t, addr, embedded.WithDataDir(dir), embedded.WithTrimEvery(trimEvery))
	client = newClient(t, k)
	end, err := client.GetOffset("work", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if end != 300 {
		t.Fatalf("end of work after a restart = %d, want 300", end)
	}
	produce(t, client, "work", 300, 1)
	if got := firstValue(t, client, "work", 300); got != "work-300" {
		t.Fatalf("record 300 after a restart = %q", got)
	}
}
