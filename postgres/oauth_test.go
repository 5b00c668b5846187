package postgres

import (
	"testing"

	"github.com/agentik/agentik/oauth"
	"github.com/agentik/agentik/oauth/oauthtest"
)

func TestOAuthStore(t *testing.T) {
	oauthtest.Run(t, func(t *testing.T) oauth.Store { return openDSN(t, freshSchema(t)).OAuth() })
}
