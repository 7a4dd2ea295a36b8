"""The inside views: tokens, attention, logit lens."""
