package config

// A2AConfig configures the A2A area. Its variables are read here.
type A2AConfig struct{}

func (c *A2AConfig) read(r *reader) {}
