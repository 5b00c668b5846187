package main

import (
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/agentik/agentik/config"
)

// watchReload re-reads the configuration on SIGHUP and applies what can
// change while serving: the tokens (and the agents each principal may use),
// each agent's system prompt and its tool allow and deny lists. Other
// changes are logged as needing a restart. A configuration that no longer
// loads changes nothing.
func (a *app) watchReload() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	last := a.cfg
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-hup:
				last = a.reload(last)
			}
		}
	}()
	a.onClose = append(a.onClose, func() { signal.Stop(hup); close(done); <-finished })
}

// reload applies the configuration as it is now over last, and returns what
// is in force afterwards.
func (a *app) reload(last config.Config) config.Config {
	cfg := last
	if last.File != "" {
		c, err := loadConfig(last.File, a.getenv)
		if err != nil {
			a.log.Error("configuration reload failed; keeping the configuration in force", "file", last.File, "err", strings.ReplaceAll(err.Error(), "\n", "; "))
			return last
		}
		cfg = c
	} else {
		// Without a file only the tokens file can change.
		cfg.Auth.TokensFile = last.Auth.TokensFile
	}
	var restart []string

	// Tokens.
	switch {
	case a.tokens != nil:
		pairs, limits, err := tokenSet(cfg, a.getenv)
		if err != nil {
			a.log.Error("token reload failed; keeping the old tokens", "err", err)
			cfg.Tokens, cfg.Auth = last.Tokens, last.Auth
		} else {
			a.tokens.ReplaceLimited(pairs, limits)
			a.setAdmins(cfg)
			a.log.Info("tokens reloaded", "tokens", a.tokens.Len())
		}
	case authConfigured(cfg):
		restart = append(restart, "authentication (it was off at start)")
		cfg.Tokens, cfg.Auth = last.Tokens, last.Auth
	}

	// Agents: prompts and tool lists now; the rest at the next start.
	applied := make([]config.Agent, 0, len(last.Agents))
	for _, old := range last.Agents {
		i := slices.IndexFunc(cfg.Agents, func(c config.Agent) bool { return c.ID == old.ID })
		ag := a.agentByID(old.ID)
		if i < 0 || ag == nil {
			if ag != nil {
				restart = append(restart, "removing agent "+old.ID)
			}
			applied = append(applied, old)
			continue
		}
		now := cfg.Agents[i]
		if now.SystemPrompt != old.SystemPrompt {
			ag.eng.SetSystemPrompt(now.SystemPrompt)
			a.log.Info("system prompt reloaded", "agent", old.ID)
		}
		if !slices.Equal(now.Allow, old.Allow) || !slices.Equal(now.Deny, old.Deny) {
			ag.reg.SetFilter(toolFilter(now.Allow, now.Deny))
			a.log.Info("tool allow and deny lists reloaded", "agent", old.ID, "allow", now.Allow, "deny", now.Deny)
		}
		kept := now
		kept.SystemPrompt, kept.SystemPromptFile, kept.Allow, kept.Deny = old.SystemPrompt, old.SystemPromptFile, old.Allow, old.Deny
		if !reflect.DeepEqual(kept, old) {
			restart = append(restart, "agent "+old.ID+" (its model, tools, limits or policies)")
		}
		old.SystemPrompt, old.SystemPromptFile, old.Allow, old.Deny = now.SystemPrompt, now.SystemPromptFile, now.Allow, now.Deny
		applied = append(applied, old)
	}
	for _, c := range cfg.Agents {
		if a.agentByID(c.ID) == nil {
			restart = append(restart, "adding agent "+c.ID)
		}
	}
	if cfg.Port != last.Port || cfg.Host != last.Host || cfg.DBPath != last.DBPath || cfg.DatabaseURL != last.DatabaseURL ||
		!slices.Equal(cfg.HTTP.CORSOrigins, last.HTTP.CORSOrigins) || cfg.LogLevel != last.LogLevel || cfg.LogFormat != last.LogFormat {
		restart = append(restart, "process settings (listen, database, http, log)")
	}
	if len(restart) > 0 {
		a.log.Warn("configuration changes that need a restart were not applied", "changes", strings.Join(restart, "; "))
	}
	a.log.Info("configuration reloaded", "file", last.File)
	// What is in force: the new tokens, the old agents with their new
	// prompts and tool lists, the old process settings.
	last.Tokens, last.Auth, last.Agents = cfg.Tokens, cfg.Auth, applied
	return last
}
