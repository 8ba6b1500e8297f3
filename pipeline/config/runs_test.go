package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestRuns_retention(t *testing.T) {
	cases := []struct {
		yaml string
		want time.Duration
	}{
		{"", config.DefaultRetention},
		{"runs: {}", config.DefaultRetention},
		{"runs: {retention: 24h}", 24 * time.Hour},
		{"runs: {retention: 0}", 0}, // keep for good
		{"runs: {retention: 0s}", 0},
		{"runs: {retention: 1s}", time.Second},
	}
	for _, c := range cases {
		cfg, err := config.Parse([]byte(c.yaml))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if got := cfg.Runs.KeepFor(); got != c.want {
			t.Errorf("%q: retention %v, want %v", c.yaml, got, c.want)
		}
	}
}

func TestRuns_retention_refused(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"runs: {retention: -1h}", "runs.retention: -1h0m0s: want 0 (keep for good) or at least 1s"},
		{"runs: {retention: 500ms}", "runs.retention: 500ms: want 0 (keep for good) or at least 1s"},
		{"runs: {retention: 7}", "want a duration string with a unit"},
	}
	refused(t, cases)
}

func TestRuns_searchable_metadata_names_keys_once_each(t *testing.T) {
	cfg, err := config.Parse([]byte("runs: {searchable_metadata: [order, customer]}"))
	if err != nil || strings.Join(cfg.Runs.SearchableMetadata, ",") != "order,customer" {
		t.Fatalf("searchable_metadata = %v, %v", cfg.Runs.SearchableMetadata, err)
	}
	refused(t, []struct{ yaml, want string }{
		{`runs: {searchable_metadata: [order, order]}`, `runs.searchable_metadata[1]: "order" is named twice`},
		{`runs: {searchable_metadata: ["a=b"]}`, `runs.searchable_metadata[0]: "a=b": want 1 to 64 bytes without "="`},
		{`runs: {searchable_metadata: [""]}`, `runs.searchable_metadata[0]: "": want 1 to 64 bytes`},
		{`runs: {searchable_metadata: [a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q]}`, "runs.searchable_metadata: 17 keys: at most 16"},
	})
}

func TestRuns_archive(t *testing.T) {
	cases := []struct {
		yaml string
		want config.Archive
	}{
		{"", config.Archive{}},
		{"runs: {archive: {to: topic}}", config.Archive{To: config.ArchiveToTopic}},
		{"runs: {archive: {to: files, dir: /var/lib/stepwise/archive}}", config.Archive{To: config.ArchiveToFiles, Dir: "/var/lib/stepwise/archive"}},
	}
	for _, c := range cases {
		cfg, err := config.Parse([]byte(c.yaml))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if cfg.Runs.Archive != c.want || cfg.Runs.Archive.On() != (c.want.To != "") {
			t.Errorf("%q: archive %+v, want %+v", c.yaml, cfg.Runs.Archive, c.want)
		}
	}
}

func TestRuns_archive_refused(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"runs: {archive: {to: s3}}", `runs.archive.to: "s3": want topic or files`},
		{"runs: {archive: {to: files}}", "runs.archive.dir: missing: to: files needs the directory of the files"},
		{"runs: {archive: {to: topic, dir: /tmp}}", "runs.archive.dir: only with to: files"},
		{"runs: {archive: {dir: /tmp}}", "runs.archive.dir: set without to: files"},
	}
	refused(t, cases)
}

// refused checks that each case's yaml is refused with an error that
// contains its want.
func refused(t *testing.T, cases []struct{ yaml, want string }) {
	t.Helper()
	for _, c := range cases {
		_, err := config.Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.yaml, err, c.want)
		}
	}
}
