package config

// AGUIConfig configures the AGUI area. Its variables are read here.
type AGUIConfig struct{}

func (c *AGUIConfig) read(r *reader) {}
