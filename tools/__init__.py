"""tools: the agent's tools (framework and tools arrive with their own issues)."""
