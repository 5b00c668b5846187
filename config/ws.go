package config

// WSConfig configures the WS area. Its variables are read here.
type WSConfig struct{}

func (c *WSConfig) read(r *reader) {}
