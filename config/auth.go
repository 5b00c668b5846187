package config

// AuthConfig configures the Auth area. Its variables are read here.
type AuthConfig struct{}

func (c *AuthConfig) read(r *reader) {}
