package main

import "context"

// mountWS serves the WebSocket chat protocol.
func (a *app) mountWS(ctx context.Context) error { return nil }
