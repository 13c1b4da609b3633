"""daemon: lspilot's CLI, configuration, agent loop, sessions and editor-facing server."""
