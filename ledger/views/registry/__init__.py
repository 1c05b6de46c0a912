"""The registry view: families, versions, promotions, aliases and retirements."""
