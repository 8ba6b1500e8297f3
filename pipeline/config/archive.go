package config

import "fmt"

// Where runs.archive sends the runs it archives.
const (
	// ArchiveToTopic publishes each archived run to the run-archive topic
	// (compacted, keyed by run id).
	ArchiveToTopic = "topic"
	// ArchiveToFiles appends each archived run to a JSON Lines file of a
	// directory, one file per day and process.
	ArchiveToFiles = "files"
)

// Archive is runs.archive: where each ended run's record (the run, its
// messages and its event log) is written before the retention may delete
// it (ADR 0070). Unset, no run is archived.
type Archive struct {
	// To is ArchiveToTopic or ArchiveToFiles.
	To string `json:"to,omitempty"`
	// Dir is the directory of the files (ArchiveToFiles only).
	Dir string `json:"dir,omitempty"`
}

// On reports whether runs are archived.
func (a Archive) On() bool { return a.To != "" }

func (a Archive) check(ps *problems, path string) {
	switch a.To {
	case "":
		if a.Dir != "" {
			ps.add(field(path, "dir"), "set without to: files")
		}
	case ArchiveToTopic:
		if a.Dir != "" {
			ps.add(field(path, "dir"), "only with to: files")
		}
	case ArchiveToFiles:
		if a.Dir == "" {
			ps.add(field(path, "dir"), "missing: to: files needs the directory of the files")
		}
	default:
		ps.add(field(path, "to"), fmt.Sprintf("%q: want %s or %s", a.To, ArchiveToTopic, ArchiveToFiles))
	}
}
