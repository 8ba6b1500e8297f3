package config

// Auth holds the gateway's API keys (yaml key "auth"). With no key the
// gateway is open, and only on loopback.
type Auth struct{}

func (a *Auth) setDefaults() {}

func (a Auth) check(ps *problems, path string) {}
