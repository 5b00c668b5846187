package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/agentik/agentik/oauth"
	"github.com/agentik/agentik/oauth/oauthtest"
)

func TestOAuthStore(t *testing.T) {
	oauthtest.Run(t, func(t *testing.T) oauth.Store { return openPath(t, filepath.Join(t.TempDir(), "db")).OAuth() })
}
