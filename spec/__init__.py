"""LSE spec."""
