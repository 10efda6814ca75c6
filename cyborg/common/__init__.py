"""Pure rules shared by the agent, the conductor and the database layer."""
