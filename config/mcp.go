package config

// MCPConfig configures the MCP area. Its variables are read here.
type MCPConfig struct{}

func (c *MCPConfig) read(r *reader) {}
