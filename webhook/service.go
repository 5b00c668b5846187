package webhook

import (
	"context"

	"github.com/agentik/agentik"
)

var _ agentik.Webhooks = (*Service)(nil)

// DefaultLimit is the most webhooks a principal may have on an agent.
const DefaultLimit = 20

// Service is the webhooks API of one agent (agentik.Webhooks).
type Service struct {
	store        agentik.WebhookStore // the agent's view
	allowPrivate bool
	limit        int
}

// NewService returns the webhooks API of an agent kept in store (its view).
func NewService(store agentik.WebhookStore, allowPrivate bool, limit int) *Service {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Service{store: store, allowPrivate: allowPrivate, limit: limit}
}

// CreateWebhook checks req and stores the webhook with a new secret,
// which it returns (the only time it is shown).
func (s *Service) CreateWebhook(ctx context.Context, req agentik.WebhookRequest) (agentik.Webhook, error) {
	if err := CheckURL(ctx, req.URL, s.allowPrivate); err != nil {
		return agentik.Webhook{}, err
	}
	if err := agentik.ValidateWebhookEvents(req.Events); err != nil {
		return agentik.Webhook{}, err
	}
	if err := agentik.ValidateWebhookDescription(req.Description); err != nil {
		return agentik.Webhook{}, err
	}
	w := agentik.Webhook{ID: agentik.NewID(), URL: req.URL, Events: req.Events, Description: req.Description,
		Secret: NewSecret(), Enabled: true, Source: agentik.SourceAPI, CreatedAt: agentik.Now(), Owner: agentik.PrincipalFrom(ctx)}
	if err := s.store.CreateWebhook(ctx, w, s.limit); err != nil {
		return agentik.Webhook{}, err
	}
	return w, nil
}

// ListWebhooks returns the caller's webhooks, without their secrets.
func (s *Service) ListWebhooks(ctx context.Context) ([]agentik.Webhook, error) {
	list, err := s.store.ListWebhooks(ctx, agentik.PrincipalFrom(ctx))
	for i := range list {
		list[i].Secret = ""
	}
	return list, err
}

// GetWebhook returns the caller's webhook, without its secret.
func (s *Service) GetWebhook(ctx context.Context, id string) (agentik.Webhook, error) {
	w, err := s.store.GetWebhook(ctx, id)
	if err != nil {
		return w, err
	}
	if w.AllOwners || w.Owner != agentik.PrincipalFrom(ctx) {
		return agentik.Webhook{}, agentik.Errorf(agentik.ENotFound, "webhook %s not found", id)
	}
	w.Secret = ""
	return w, nil
}

// DeleteWebhook removes the caller's webhook and its deliveries.
func (s *Service) DeleteWebhook(ctx context.Context, id string) error {
	if _, err := s.GetWebhook(ctx, id); err != nil {
		return err
	}
	return s.store.DeleteWebhook(ctx, id)
}

// WebhookDeliveries returns the latest deliveries of the caller's webhook,
// newest first: the delivery log.
func (s *Service) WebhookDeliveries(ctx context.Context, id string) ([]agentik.Delivery, error) {
	if _, err := s.GetWebhook(ctx, id); err != nil {
		return nil, err
	}
	return s.store.Deliveries(ctx, id, 100)
}
