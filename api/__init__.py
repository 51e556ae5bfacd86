"""LSE api."""
