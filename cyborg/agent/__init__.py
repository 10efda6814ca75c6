"""The agent: discovers accelerators on its compute host and reports them."""
