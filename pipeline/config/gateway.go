package config

// Gateway holds the settings of the gateway's HTTP server (yaml key
// "gateway").
type Gateway struct{}

func (g *Gateway) setDefaults() {}

func (g Gateway) check(ps *problems, path string) {}
