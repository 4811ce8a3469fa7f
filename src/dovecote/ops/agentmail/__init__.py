"""The agent-mail profile's use cases: mcp_agent_mail's projects, agents and integer ids as dovecote's own."""
