package main

import "context"

// setupAuth sets a.auth from the configured tokens (nil: open server).
func (a *app) setupAuth(ctx context.Context) error { return nil }
