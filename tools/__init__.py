"""LSE tools."""
