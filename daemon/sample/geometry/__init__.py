"""A tiny sample project for `lspilot demo`."""
