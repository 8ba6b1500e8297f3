package config

// Decisions holds how decisions are checked (yaml key "decisions").
type Decisions struct{}

func (d *Decisions) setDefaults() {}

func (d Decisions) check(ps *problems, path string) {}
