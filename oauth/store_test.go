package oauth_test

import (
	"testing"

	"github.com/agentik/agentik/oauth"
	"github.com/agentik/agentik/oauth/oauthtest"
)

func TestMemStore(t *testing.T) {
	oauthtest.Run(t, func(*testing.T) oauth.Store { return oauth.NewMemStore() })
}
