package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stepwise-run/stepwise/internal/testinfra"
)

// A view's MAC is the HMAC-SHA256 under the deployment's key of the run id,
// a zero byte and the view, made with no allocation once the store has
// made one (its HMAC comes from a pool); a key replaced in Redis is taken
// up when the store reads the key again.
func TestViewMAC_is_the_HMAC_of_run_and_view_and_allocates_nothing(t *testing.T) {
	ctx := context.Background()
	rdb := testinfra.RedisServerClient(t)
	s := New(rdb)
	view := []byte(`{"run":["status","running"],"ids":["c1"],"calls":[["status","succeeded"]]}`)
	want := func(run string) []byte {
		key, err := hex.DecodeString(rdb.Get(ctx, s.viewKeyKey()).Val())
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(run + "\x00" + string(view)))
		return m.Sum(nil)
	}
	for _, run := range []string{"r1", "r2", "r1"} {
		if got, err := s.viewMAC(ctx, run, view); err != nil || !hmac.Equal(got[:], want(run)) {
			t.Errorf("the MAC of %s's view is %x, %v; want %x", run, got, err, want(run))
		}
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = s.viewMAC(ctx, "r1", view) }); n != 0 && !raceEnabled {
		t.Errorf("a view's MAC costs %v allocations, want 0", n)
	}

	rdb.Set(ctx, s.viewKeyKey(), hex.EncodeToString([]byte("another key of 32 bytes, or so..")), 0)
	s.viewKey.loaded = s.viewKey.loaded.Add(-viewKeyFor)
	if got, err := s.viewMAC(ctx, "r1", view); err != nil || !hmac.Equal(got[:], want("r1")) {
		t.Errorf("under a replaced key, the MAC is %x, %v; want %x", got, err, want("r1"))
	}
}
