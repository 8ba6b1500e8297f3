// Package versions pins runs to versions of their agents. A version is the
// content hash of an agent's definition and those of the tools it may
// call (Definition): the same definition is the same version in every
// process, and any change to it is a new one.
//
// A Catalog holds the versions of the configuration a process loaded (its
// current ones, hashed at start) and every version it has read since. A
// run records the hash of its agent's current version where it is created
// (Pin, which writes the definition to Redis the first time: SET NX, a
// definition is written once and never changes), and a worker resolves a
// run's definition by that hash (Get): a map lookup once the version is
// known, one read of Redis the first time. So a configuration
// change applies to new runs only, and a run parked across a deploy
// finishes on the version it started with. A version missing from Redis
// is ErrLost: its runs end with an error, never on another version.
//
//	cat, err := versions.New(cfg, st)
//	run.AgentVersion, err = cat.Pin(ctx, "assistant")
//	v, err := cat.Get(ctx, run.AgentVersion)
//	tool, ok := v.Tool("lookup")
//
// ADR 0068 says why and what a version holds.
package versions
