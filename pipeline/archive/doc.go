// Package archive writes the record of each ended run (runs.archive, ADR
// 0070) before the retention may delete the run: to the run-archive topic
// (compacted, keyed by run id) or to JSON Lines files, one per day and
// process. The step worker archives a run when it is done, before its
// result is published; until the archive is written the run keeps no time
// to live (store.WithArchive), so a run is never deleted unarchived. A
// crash between the archive and the rest re-archives the same run, which
// the compacted topic (last record per key) and a reader keeping the last
// line per run id absorb.
package archive
