package main

import "context"

// mountAGUI serves the AG-UI facade.
func (a *app) mountAGUI(ctx context.Context) error { return nil }
