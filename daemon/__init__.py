"""daemon: lspilot's CLI, configuration and (in later issues) the agent loop and editor server."""
